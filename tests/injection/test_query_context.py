"""Query context: a turn's search uses the channel's recent exchanges (real server and model)."""

from __future__ import annotations

from dataclasses import replace

from memsidecar.v1 import injection_pb2 as inj

from sidecar.injection.config import MemoryInjectionConfig
from sidecar.live import Live
from tests.conftest import Running
from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put

FACTS = [
    "Sherlock Holmes is a detective who lives at 221B Baker Street in London.",
    "Arthur Conan Doyle created Sherlock Holmes in 1887.",
    "Agatha Christie created Hercule Poirot, a Belgian detective.",
    "Bob Kane and Bill Finger created Batman for DC Comics in 1939.",
    "Mary Shelley created Frankenstein's creature in her 1818 novel.",
    "Stan Lee created Spider-Man with Steve Ditko in 1962.",
    "Walt Disney created Mickey Mouse and first voiced him himself.",
    "Jim Henson created Kermit the Frog and performed him for decades.",
    "The billing service stores its invoices in PostgreSQL 16.",
    "The office cat sleeps on the windowsill every afternoon.",
    "The deploy pipeline runs on GitHub Actions every night at 2am.",
    "Our team lunch is on Fridays at the Italian place downstairs.",
    "The staging cluster has three nodes in the Frankfurt region.",
    "Invoices older than seven years are archived to cold storage.",
    "The support rota changes every Monday morning.",
    "The VPN certificate expires at the end of March.",
    "Coffee beans are ordered from a roaster in Lisbon.",
    "The mobile app is released every second Tuesday.",
]
TALK = [("Tell me about Sherlock Holmes.", "He is a detective living at 221B Baker Street."),
        ("Where does he live?", "In London."),
        ("Who created him?", "")]
# One item a block and no block held: each turn's block is its best hit.
ONE = {"max_total": 1, "max_injected_blocks_in_history": 0}
# Room for what the text alone finds and what the conversation adds; no block held (a turn
# whose own hits fill its block is not steered: nothing could be added).
FEW = {"max_total": 10, "max_injected_blocks_in_history": 0}


def configure(live: Running, **fields: object) -> None:
    """Every agent's injection config becomes ``fields`` (hot, as a reload would)."""
    app = live.server.app
    config = replace(app.settings.current,
                     defaults=MemoryInjectionConfig(**fields))  # type: ignore[arg-type]
    app.injector.config = Live.fixed(config)


def converse(live: Running, channel: str, talk: list[tuple[str, str]],
             **fields: object) -> list[inj.InjectResponse]:
    """The README's loop: PruneHistory with the channel -> Inject -> block, text, reply."""
    history: list[inj.Message] = []
    replies = []
    for text, answer in talk:
        pruned = live.injection.PruneHistory(inj.PruneHistoryRequest(
            messages=history, channel_id=channel))  # keeping the configured blocks
        history = list(pruned.messages)
        reply = inject(live, text, channel=channel, **fields)
        replies.append(reply)
        if reply.block:
            history.append(inj.Message(role=inj.ROLE_USER, content=reply.block))
        history += [inj.Message(role=inj.ROLE_USER, content=text),
                    inj.Message(role=inj.ROLE_ASSISTANT, content=answer)]
    return replies


def stored(live: Running) -> dict[str, str]:
    return {put(live, fact).id: fact for fact in FACTS}


def test_the_conversation_adds_to_a_follow_up_and_never_takes_its_own_best(
        serve: Serve) -> None:
    live = serve(**ONE)
    facts = stored(live)
    doyle = next(i for i, f in facts.items() if f.startswith("Arthur"))
    configure(live, query_context_turns=0, **ONE)
    alone = converse(live, "alone", TALK)[-1]
    assert ids(alone) != [doyle]  # the text alone's best is another creator
    configure(live, **ONE)
    one = converse(live, "with", TALK)[-1]
    assert ids(one) == ids(alone)  # one slot: its own best, and nothing steered
    trace = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="with"))
    assert trace.turns[-1].context_gate == 0 and not trace.turns[-1].focus_offered
    configure(live, **FEW)
    with_context = converse(live, "few", TALK)[-1]
    assert doyle in ids(with_context) and ids(with_context)[0] == ids(alone)[0]
    trace = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="few"))
    assert trace.turns[-1].context_gate == 1


def test_a_new_topic_gets_what_it_gets_alone(serve: Serve) -> None:
    live = serve(**ONE)
    stored(live)
    talk = [*TALK[:2], ("Which database stores the billing service's invoices?", "")]
    after = converse(live, "after", talk)[-1]
    configure(live, query_context_turns=0, **ONE)
    alone = converse(live, "alone", talk[2:])[-1]
    assert ids(after) == ids(alone) and len(ids(alone)) == 1
    trace = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="after"))
    assert trace.turns[-1].context_gate == 0 and not trace.turns[-1].context


def test_context_off_gives_the_blocks_of_the_text_alone(serve: Serve) -> None:
    live = serve(query_context_turns=0)
    stored(live)
    off = [r.block.rsplit("\n", 1)[0] for r in converse(live, "off", TALK)]
    fresh = [r.block.rsplit("\n", 1)[0] for text, _ in TALK
             for r in converse(live, f"fresh-{text}", [(text, "")])]
    # the second and third turns on their own channels hold no earlier block: compare ids
    assert off[0] == fresh[0]
    configure(live, query_context_terms=0.0, query_context_weight=0.0)
    zero = [r.block.rsplit("\n", 1)[0] for r in converse(live, "zero", TALK)]
    assert zero == off


def test_trace_shows_the_context_and_a_retry_returns_the_same_block(serve: Serve) -> None:
    live = serve(**FEW)
    stored(live)
    replies = converse(live, "c", TALK)
    again = inject(live, TALK[-1][0], channel="c", turn=replies[-1].turn)
    assert again.block == replies[-1].block and again.turn == 3
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="c")).turns
    assert [t.turn for t in turns] == [1, 2, 3]
    assert not turns[0].context  # nothing earlier
    third = turns[2]
    assert [c.turn for c in third.context] == [1, 2]
    assert third.context_gate == 1 and all(c.reply for c in third.context)  # one own term
    weights = [(c.terms_weight, c.vector_weight) for c in third.context]
    assert weights == [(0.5, 0.25), (1.0, 0.5)]  # the defaults, halved a turn back


def test_a_system_retrigger_adds_no_context(serve: Serve) -> None:
    live = serve(**FEW)
    stored(live)
    converse(live, "c", TALK[:1])
    skipped = inject(live, "Who created him?", channel="c", source="system")
    assert skipped.skip_reason == "system_source"
    inject(live, "Who created him?", channel="c")
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="c")).turns
    assert [t.turn for t in turns] == [1, 2] and [c.turn for c in turns[1].context] == [1]


def test_the_context_comes_back_after_a_restart(serve: Serve) -> None:
    live = serve(**FEW)
    facts = stored(live)
    doyle = next(i for i, f in facts.items() if f.startswith("Arthur"))
    converse(live, "c", TALK[:2])
    live.close()
    live = serve(**FEW)
    third = converse(live, "c", TALK[2:])[-1]
    assert doyle in ids(third)
    turns = live.injection.GetInjectionTrace(inj.GetInjectionTraceRequest(channel_id="c")).turns
    assert [c.turn for c in turns[-1].context] == [1, 2]
