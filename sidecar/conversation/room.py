"""The conversation's part in one Inject, behind one small interface (``Conversation``).

A turn is first searched by its own text, as Search would (the pipeline's pool). Then:

- a content-free turn ("ok thanks", "lol", an emoji: ``chatter``) gets nothing: ``Plan.quiet``;
- a turn that says enough to stand alone (``query_context.gate`` 0), a channel's first turn,
  and a turn whose own best hit is confident (cosine at least ``query_context_new_subject``)
  and far from the conversation's focus (a new subject) keep their own search alone;
- any other turn is a follow-up: the pipeline searches again steered by its context (the
  same embedding, no second model call), and the focus offers what was written next to what
  the conversation drew on. ``merged`` puts the turn's own hits first, then the focus's
  offers, then the steered search's: the context adds and reorders within ``max_total`` and
  ``max_tokens``, and never displaces what the turn's own text would inject.

A turn's context is its own speaker's recent turns (and the replies to them) when the
request names the speaker, else every recent turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sidecar.conversation import focus
from sidecar.conversation.chatter import content_free
from sidecar.conversation.focus import NOWHERE, Around, Focused, Steered, Votes
from sidecar.conversation.query_context import (
    MAX_CONTEXT_CHARS,
    QueryContext,
    RecentTurn,
    query_context,
    spoken,
)
from sidecar.conversation.query_context import NONE as NO_CONTEXT
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.pools import ContextualPool
from sidecar.injection.types import Candidate
from sidecar.retrieval.contract import Retriever

# A channel's focus worked out ahead: (after turn, agent, speaker, around).
Ahead = tuple[int, str, str, Around]


@dataclass(frozen=True, slots=True)
class Plan:
    """What the conversation does for one turn: nothing (``quiet``: content-free), or steer
    its search with ``context`` and focus it ``around`` (NO_CONTEXT: its own search alone;
    ``new_subject``: because its own best hit is confident and far from the focus)."""

    quiet: bool = False
    context: QueryContext = NO_CONTEXT
    around: Around = NOWHERE
    new_subject: bool = False

    @property
    def steered(self) -> bool:
        return self.context.gate > 0


QUIET = Plan(quiet=True)
ALONE = Plan()


@dataclass(frozen=True, slots=True)
class Conversation:
    retriever: Retriever

    def quiet(self, text: str) -> bool:
        """``text`` is content-free (``chatter``): the turn gets nothing and moves nothing."""
        return content_free(text)

    def plan(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn],
             ahead: Ahead | None, turn: int, agent_id: str, text: str, speaker: str,
             own: Sequence[Candidate]) -> Plan:
        """The plan of ``turn`` (``text`` by ``speaker``, "" when not known) of a channel whose
        recent turns are ``recent``, given the hits of its own search (``own``, best first,
        captured turns left out) and the focus worked out ahead (``ahead``, if any)."""
        if content_free(text):
            return QUIET
        if config.query_context_turns <= 0 or not spoken(recent, turn, speaker):
            return ALONE
        context = query_context(config, recent, turn, len(self.retriever.query_terms(text)),
                                speaker)
        if context.gate <= 0:
            return ALONE
        taken = self._around(config, recent, ahead, turn, agent_id, speaker)
        if own and own[0].cosine >= config.query_context_new_subject and focus.far_from(
                taken, own[0], config.query_context_focus_cohesion):
            return Plan(new_subject=True)
        return Plan(context=context, around=taken)

    def _around(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn],
                ahead: Ahead | None, turn: int, agent_id: str, speaker: str) -> Around:
        if config.query_context_focus <= 0:
            return NOWHERE
        if ahead is not None and ahead[:3] == (turn - 1, agent_id, speaker):
            return ahead[3]
        return self.around(config, recent, turn, agent_id, speaker)

    def around(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn], turn: int,
               agent_id: str, speaker: str) -> Around:
        """The focus of ``turn`` by ``speaker`` (worked out ahead by a PruneHistory)."""
        return focus.around(spoken(recent, turn, speaker), turn, self.retriever, agent_id,
                            config.query_context_focus_radius)

    def offers(self, config: MemoryInjectionConfig, plan: Plan, steered: Steered,
               in_view: set[str], agent_id: str) -> Focused:
        """What the focus offers a follow-up (nothing to a turn that is not one)."""
        if not plan.steered:
            return focus.NONE
        return focus.focus(config, plan.around, steered, in_view, self.retriever, agent_id)

    def asked(self, config: MemoryInjectionConfig, plan: Plan, turn: int, text: str,
              embedding: np.ndarray, hits: Sequence[Candidate],
              speaker: str) -> RecentTurn | None:
        """What the channel keeps of the turn for the next ones (None: the context is off):
        its text, embedding, speaker and the votes of its hits (captured turns left out); a
        content-free turn only waits for its reply (no text, no votes)."""
        if config.query_context_turns <= 0:
            return None
        if plan.quiet:
            return RecentTurn(turn, "", embedding, speaker=speaker)
        votes = (focus.hit_votes([c.memory.id for c in hits])
                 if config.query_context_focus > 0 else ())
        return RecentTurn(turn, text[-MAX_CONTEXT_CHARS:], embedding, votes=votes,
                          speaker=speaker)

    def reply_votes(self, config: MemoryInjectionConfig, agent_id: str, asked: RecentTurn,
                    in_view: Sequence[str], reply: str) -> Votes:
        """The votes of the reply to ``asked`` (none to a content-free turn's)."""
        if asked.quiet or config.query_context_turns <= 0 or config.query_context_focus <= 0:
            return ()
        return focus.reply_vote(self.retriever, agent_id, asked.text, in_view, reply)


def merged(own: ContextualPool, focused: Focused,
           steered: ContextualPool | None) -> list[Candidate]:
    """The turn's contextual candidates in priority order: its own search's hits, then the
    focus's offers, then the steered search's hits, captured turns of both searches last
    (evidence of what was said, not answers); each memory once (its first place)."""
    out: list[Candidate] = []
    seen: set[str] = set()
    later = (steered.answers, steered.captured) if steered is not None else ((), ())
    for c in (*own.answers, *focused.candidates, *later[0], *own.captured, *later[1]):
        if c.memory.id not in seen:
            seen.add(c.memory.id)
            out.append(c)
    return out
