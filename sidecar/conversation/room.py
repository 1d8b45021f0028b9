"""The conversation's part in one Inject, behind one small interface (``Conversation``).

A turn is first searched by its own text, as Search would (the pipeline's pool). Then:

- a content-free turn ("ok thanks", "lol", an emoji: ``chatter``) gets nothing: ``Plan.quiet``;
- a turn that says enough to stand alone (``query_context.gate`` 0), a channel's first turn,
  and a turn whose own best hit is as close as a restatement (cosine at least
  ``query_context_new_subject``) and far from the conversation's focus (a new subject) keep
  their own search alone;
- any other turn is a follow-up: the pipeline searches again steered by its context (the
  same embedding, no second model call), and the focus offers what was written next to what
  the conversation drew on. ``merged`` puts the turn's guaranteed own hits first, then the
  focus's strong offers, its further own hits, the focus's weaker offers and the steered
  search's hits (with a focus, those reading like it): the context adds and reorders
  within ``max_total`` and ``max_tokens``, and never displaces what the turn's own text
  would inject first.

A turn's context is its own speaker's recent turns (and the replies to them) when the
request names the speaker, else every recent turn.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from sidecar.conversation import focus
from sidecar.conversation.chatter import content_free
from sidecar.conversation.focus import NOWHERE, Around, Focused, Steered, Votes
from sidecar.conversation.kin import KinMemo
from sidecar.conversation.query_context import NONE as NO_CONTEXT
from sidecar.conversation.query_context import (
    HoldsSecret,
    QueryContext,
    RecentTurn,
    kept_turn,
    query_context,
    spoken,
)
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.pools import ContextualPool
from sidecar.injection.types import Candidate
from sidecar.records import Viewer
from sidecar.retrieval.contract import Retriever

log = logging.getLogger(__name__)

# Focus computations asked for by PruneHistory calls that may wait for an Inject to start them.
MAX_WAITING = 64

# A channel's focus worked out ahead: (after turn, viewer, around), the around being worked
# out on the conversation's worker thread (``Conversation.around``).
Ahead = tuple[int, Viewer, Future[Around]]


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
    # Works the next turn's focus out (``around``) beside the Inject's embedding.
    worker: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(
        1, thread_name_prefix="focus-ahead"))
    # The focus PruneHistory calls asked for, waiting for the next Inject to start them.
    waiting: deque[Callable[[], None]] = field(default_factory=deque)
    # The focus's searches for its anchors, remembered while nothing they read changed.
    kin: KinMemo = field(default_factory=KinMemo)

    def quiet(self, text: str) -> bool:
        """``text`` is content-free (``chatter``): the turn gets nothing and moves nothing.
        The first thing an Inject asks, before its embedding: the focus worked out ahead
        (``around``) starts here, on the worker, while the embedding leaves it the
        interpreter."""
        self._start()
        return content_free(text)

    def _start(self) -> None:
        while True:
            try:
                job = self.waiting.popleft()
            except IndexError:
                return
            self.worker.submit(job)

    def plan(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn],
             ahead: Ahead | None, turn: int, viewer: Viewer, text: str,
             own: Sequence[Candidate]) -> Plan:
        """The plan of ``turn`` (``text`` for ``viewer``, whose ``user_id`` is the speaker, ""
        when not known) of a channel whose recent turns are ``recent``, given the hits of its
        own search (``own``, best first, captured turns left out) and the focus worked out
        ahead (``ahead``, if any)."""
        return self.settle(config, self.draft(config, recent, ahead, turn, viewer, text), own)

    def draft(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn],
              ahead: Ahead | None, turn: int, viewer: Viewer, text: str) -> Plan:
        """``plan`` before the turn's own search (``settle`` then tells a new subject)."""
        if content_free(text):
            return QUIET
        speaker = viewer.user_id
        if config.query_context_turns <= 0 or not spoken(recent, turn, speaker):
            return ALONE
        context = query_context(config, recent, turn, len(self.retriever.query_terms(text)),
                                speaker)
        if context.gate <= 0:
            return ALONE
        return Plan(context=context, around=self._around(config, recent, ahead, turn, viewer))

    def settle(self, config: MemoryInjectionConfig, draft: Plan,
               own: Sequence[Candidate]) -> Plan:
        """The plan ``draft`` becomes given the hits of the turn's own search."""
        if draft.steered and own and own[0].cosine >= config.query_context_new_subject and \
                focus.far_from(draft.around, own[0], config.query_context_focus_cohesion):
            return Plan(new_subject=True)
        return draft

    def _around(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn],
                ahead: Ahead | None, turn: int, viewer: Viewer) -> Around:
        if config.query_context_focus <= 0:
            return NOWHERE
        if ahead is not None and ahead[:2] == (turn - 1, viewer) and not ahead[2].cancel():
            try:  # started by ``quiet``: ready, or soon
                return ahead[2].result()
            except Exception:  # worked out again here, where its error is the turn's
                log.warning("focus worked out ahead failed", exc_info=True)
        return self._worked_out(config, recent, turn, viewer)

    def around(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn], turn: int,
               viewer: Viewer) -> Future[Around]:
        """The focus of ``turn`` for ``viewer`` (its speaker's turns), to be worked out on
        the worker thread: a PruneHistory asks for it and replies without it; the next
        Inject starts it before its embedding (``quiet``) and its ``plan`` takes it. Never
        more than ``MAX_WAITING`` wait: the oldest then start at once."""
        out: Future[Around] = Future()
        args = (config, tuple(recent), turn, viewer)

        def job() -> None:
            if out.set_running_or_notify_cancel():  # not taken over by ``plan``
                try:
                    out.set_result(self._worked_out(*args))
                except BaseException as exc:
                    out.set_exception(exc)

        self.waiting.append(job)
        while len(self.waiting) > MAX_WAITING:
            with contextlib.suppress(IndexError):
                self.worker.submit(self.waiting.popleft())
        return out

    def _worked_out(self, config: MemoryInjectionConfig, recent: Sequence[RecentTurn],
                    turn: int, viewer: Viewer) -> Around:
        return focus.around(spoken(recent, turn, viewer.user_id), turn, self.retriever, viewer,
                            config.query_context_focus_radius,
                            config.query_context_focus_cohesion, self.kin.search)

    def offers(self, config: MemoryInjectionConfig, plan: Plan, steered: Steered,
               in_view: set[str], viewer: Viewer) -> Focused:
        """What the focus offers a follow-up (nothing to a turn that is not one)."""
        if not plan.steered:
            return focus.NONE
        return focus.focus(config, plan.around, steered, in_view, self.retriever, viewer)

    def asked(self, config: MemoryInjectionConfig, plan: Plan, turn: int, text: str,
              embedding: np.ndarray, hits: Sequence[Candidate], speaker: str,
              holds_secret: HoldsSecret) -> RecentTurn | None:
        """What the channel keeps of the turn for the next ones (None: the context is off):
        its text (``kept_turn``: none of one that holds a secret), embedding, speaker and the
        votes of its hits (captured turns left out); a content-free turn only waits for its
        reply (no text, no votes)."""
        if config.query_context_turns <= 0:
            return None
        if plan.quiet:
            return RecentTurn(turn, "", np.zeros_like(embedding), speaker=speaker)
        votes = (focus.hit_votes([c.memory.id for c in hits])
                 if config.query_context_focus > 0 else ())
        return kept_turn(turn, text, embedding, holds_secret, votes, speaker)

    def reply_votes(self, config: MemoryInjectionConfig, viewer: Viewer, asked: RecentTurn,
                    in_view: Sequence[str], reply: str) -> Votes:
        """The votes of the reply to ``asked`` (none to a content-free turn's)."""
        if asked.quiet or config.query_context_turns <= 0 or config.query_context_focus <= 0:
            return ()
        return focus.reply_vote(self.retriever, viewer, asked.text, in_view, reply)


def merged(own: ContextualPool, focused: Focused, steered: ContextualPool | None,
           kept: int = 0) -> list[Candidate]:
    """The turn's contextual candidates in priority order: its own search's first ``kept``
    hits (0: all), then the focus's leading offers, then its further own hits, then the
    focus's other offers, then the steered search's hits (``akin``: with a focus, those
    reading like it), captured turns of both searches last (evidence of what was said, not
    answers); each memory once (its first place)."""
    out: list[Candidate] = []
    seen: set[str] = set()
    later = ((akin(steered.answers, focused), steered.captured) if steered is not None
             else ((), ()))
    first = guaranteed(own.answers, kept)
    rest = own.answers[len(first):]
    leading = focused.candidates[:focused.leading]
    trailing = focused.candidates[focused.leading:]
    for c in (*first, *leading, *rest, *trailing, *later[0], *own.captured, *later[1]):
        if c.memory.id not in seen:
            seen.add(c.memory.id)
            out.append(c)
    return out


def akin(answers: Sequence[Candidate], focused: Focused) -> Sequence[Candidate]:
    """The steered search's ``answers`` a focused block takes: those reading like the focus
    (``Focused.akin``); all of them when the turn has no focus."""
    if focused.akin is None:
        return answers
    return [c for c in answers if c.memory.id in focused.akin]


def guaranteed(answers: Sequence[Candidate], kept: int) -> Sequence[Candidate]:
    """The own hits nothing the conversation adds may displace: the first ``kept`` (0: all)."""
    return answers[:kept] if kept > 0 else answers
