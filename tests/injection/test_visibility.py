"""Cooldown follows visibility: random Inject / PruneHistory sequences against the real server.

The simulated agent keeps its history as the Go example does (PruneHistory -> Inject ->
append the block, the user message and the answer). At every turn the block must carry
exactly the turn's candidates that no block in the agent's kept history carries: (a) nothing
still in view is repeated, (b) everything whose blocks were all pruned is eligible again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memsidecar.v1 import injection_pb2 as inj

from sidecar.injection.config import MemoryInjectionConfig
from sidecar.live import Live
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put

TOPICS = {
    "db": ("Which database and backups does the billing service use?", [
        "The billing service stores invoices in PostgreSQL 16.",
        "Billing database backups run nightly to an S3 bucket.",
        "The billing PostgreSQL database has read replicas in two regions.",
    ]),
    "cat": ("Tell me about the office cat.", [
        "The office cat is called Miso and sleeps on the windowsill.",
        "Miso the office cat is fed at 9am by whoever arrives first.",
    ]),
    "deploy": ("How do deploys of the web app work?", [
        "Deploys of the web app go through GitHub Actions every night.",
        "A web app deploy needs one approval in the #releases channel.",
        "Web app deploys are rolled back with the rollback workflow in GitHub Actions.",
    ]),
}


@pytest.fixture
def world(serve: Serve) -> Iterator[tuple[Running, dict[str, set[str]]]]:
    """A server with the topics stored, and each topic's candidates as a channel that holds
    no block (K = 0) gets them."""
    live = serve(max_injected_blocks_in_history=0, semantic_threshold=1.0)
    for _, contents in TOPICS.values():
        for content in contents:
            put(live, content)
    candidates = {topic: set(ids(inject(live, question, channel=f"probe-{topic}")))
                  for topic, (question, _) in TOPICS.items()}
    assert all(len(found) >= 2 for found in candidates.values()), candidates
    yield live, candidates


def configure(live: Running, **fields: object) -> None:
    """Every agent's injection config becomes ``fields`` (the rest of the config unchanged)."""
    app = live.server.app
    config = replace(app.settings.current,
                     defaults=MemoryInjectionConfig(**fields))  # type: ignore[arg-type]
    app.injector.config = Live.fixed(config)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config_keep=st.integers(0, 5), agent_keep=st.integers(0, 5), tell=st.booleans(),
       topics=st.lists(st.sampled_from(sorted(TOPICS)), min_size=1, max_size=14))
def test_block_carries_exactly_what_is_out_of_view(
        world: tuple[Running, dict[str, set[str]]], config_keep: int, agent_keep: int,
        tell: bool, topics: list[str]) -> None:
    live, candidates = world
    # Each topic's candidates are its question's alone: no query context from earlier turns.
    configure(live, max_injected_blocks_in_history=config_keep, semantic_threshold=1.0,
              query_context_turns=0)
    if not tell:  # an agent that does not say what it keeps keeps what is configured
        agent_keep = config_keep
    channel = uuid.uuid4().hex
    history: list[tuple[inj.Message, set[str]]] = []  # with the ids a block carries
    for n, topic in enumerate(topics):
        pruned = live.injection.PruneHistory(inj.PruneHistoryRequest(
            messages=[m for m, _ in history], max_keep=agent_keep,
            channel_id=channel if tell else ""))
        gone = set(pruned.removed_indices)
        history = [h for i, h in enumerate(history) if i not in gone]
        held = set().union(*(carried for _, carried in history))
        reply = inject(live, TOPICS[topic][0], channel=channel)
        assert set(ids(reply)) == candidates[topic] - held, (n, topic)
        if reply.block:
            history.append((inj.Message(role=inj.ROLE_USER, content=reply.block),
                            set(ids(reply))))
        history += [(inj.Message(role=inj.ROLE_USER, content=f"question {n}"), set()),
                    (inj.Message(role=inj.ROLE_ASSISTANT, content=f"answer {n}"), set())]


def test_prune_with_channel_releases_the_removed_blocks(serve: Serve) -> None:
    live = serve(max_injected_blocks_in_history=5)
    db = put(live, TOPICS["db"][1][0])
    cat = put(live, TOPICS["cat"][1][0])
    first = inject(live, TOPICS["db"][0], channel="c")
    second = inject(live, TOPICS["cat"][0], channel="c")
    assert ids(first) == [db.id] and ids(second) == [cat.id]
    history = [inj.Message(role=inj.ROLE_USER, content=r.block) for r in (first, second)]
    # the agent keeps 2 blocks, not the 5 configured: block 1 goes now
    pruned = live.injection.PruneHistory(inj.PruneHistoryRequest(
        messages=history, max_keep=2, channel_id="c"))
    assert list(pruned.removed_indices) == [0] and list(pruned.released_turns) == [1]
    assert ids(inject(live, TOPICS["cat"][0], channel="c")) == []  # block 2 is held
    assert ids(inject(live, TOPICS["db"][0], channel="c")) == [db.id]


def test_history_never_pruned_uses_the_depth(serve: Serve) -> None:
    """history_pruned = false: nothing leaves the agent's view by pruning, so a memory is held
    back for context_window_depth turns and comes back after them."""
    live = serve(history_pruned=False, context_window_depth=2, max_injected_blocks_in_history=3)
    fact = put(live, "The billing service stores invoices in PostgreSQL 16.")
    question = "Where does the billing service store invoices?"
    got = [fact.id in ids(inject(live, question, turn=t)) for t in range(1, 6)]
    assert got == [True, False, False, True, False]


def test_pruned_history_holds_a_block_until_it_leaves_view(serve: Serve) -> None:
    """The default: the only non-empty block stays among the K-1 latest, so its memory is
    held back whatever the depth."""
    live = serve(context_window_depth=2, max_injected_blocks_in_history=3)
    fact = put(live, "The billing service stores invoices in PostgreSQL 16.")
    question = "Where does the billing service store invoices?"
    got = [fact.id in ids(inject(live, question, turn=t)) for t in range(1, 6)]
    assert got == [True, False, False, False, False]
