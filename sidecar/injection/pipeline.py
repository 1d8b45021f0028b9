"""Inject: embed once -> pinned + contextual pools -> dedup -> budget -> format -> record."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from sidecar import deadline
from sidecar.conversation.focus import NONE as NO_FOCUS
from sidecar.conversation.focus import Focused, Steered
from sidecar.conversation.query_context import NONE as NO_CONTEXT
from sidecar.conversation.query_context import HoldsSecret, QueryContext, RecentTurn, kept_text
from sidecar.conversation.room import ALONE, QUIET, Conversation, Plan, merged
from sidecar.embedding import Embedder
from sidecar.errors import Unavailable
from sidecar.injection import blocks, supersede
from sidecar.injection.age import age_note
from sidecar.injection.beside import WORKERS, Beside
from sidecar.injection.budget import apply_budget
from sidecar.injection.channels import ChannelStates
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.injection.dedup import dedup, kept_first
from sidecar.injection.freshness import changed_since_injected
from sidecar.injection.history import Message, last_reply
from sidecar.injection.marker import BlockSigner, marker_tokens_max
from sidecar.injection.pools import (
    ContextualPool,
    SnapshotSource,
    contextual_ahead,
    contextual_pool,
    pinned_members,
    pinned_pool,
)
from sidecar.injection.state import ChannelState, Committed
from sidecar.injection.state_repo import ChannelMoved, ChosenErased
from sidecar.injection.tokens import TokenMemo
from sidecar.injection.trace import DropReason, TracedDrop, TraceRing, trace_turn, traced_drop
from sidecar.injection.turns import next_turn
from sidecar.injection.types import (
    SYSTEM_SOURCE,
    Abandoned,
    Candidate,
    InjectedItem,
    Injection,
    InjectRequest,
    InjectStats,
    Section,
)
from sidecar.live import Live
from sidecar.records import Memory, Viewer
from sidecar.redact import echo
from sidecar.retrieval.contract import Ahead, Hit, Retriever
from sidecar.store.memories import MemoryRepo
from sidecar.timing import now_ns, now_us, timed, us_since
from sidecar.vault.pii import find_pii

if TYPE_CHECKING:  # sidecar.config registers this package's config: import it lazily
    from sidecar.capture import Capture
    from sidecar.capture.capture import HeldBack
    from sidecar.config.schema import Config

log = logging.getLogger(__name__)

# Whether the caller still waits for the reply (checked at the commit point).
Alive = Callable[[], bool]
# Shared store: builds of one Inject when other sidecars keep committing the channel first.
MOVED_ATTEMPTS = 5


@dataclass
class Injector:
    embedder: Embedder
    retriever: Retriever
    memories: MemoryRepo
    config: Live[Config]  # the running config file; each Inject reads its agent's section
    states: ChannelStates
    signer: BlockSigner
    snapshot: SnapshotSource | None = None
    trace: TraceRing = field(default_factory=lambda: TraceRing(lambda: 0))  # 0 turns: off
    capture: Capture | None = None  # turns written as memories (sidecar/capture)
    # What the query context keeps no text of (the server: the vault's screen, which follows
    # ``vault.pii_gate``).
    holds_secret: HoldsSecret = field(default=lambda text: bool(find_pii(text)))
    # Whether a turn's embedding runs beside the work that does not need it (``_own``);
    # False: in order (the reference the overlapped order is tested against).
    overlap: bool = True
    # A shared store: this sidecar's indexes made to follow the store now (the change feed's
    # read), when a turn's commit found a memory it chose erased by another sidecar.
    follow_erasures: Callable[[], object] = field(default=lambda: None)
    tokens: TokenMemo = field(init=False)
    conversation: Conversation = field(init=False)
    beside: Beside = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = TokenMemo(self.embedder.count_tokens)
        self.conversation = Conversation(self.retriever)
        self.beside = Beside(WORKERS if self.overlap else 0)

    def close(self) -> None:
        """Write the state and access records still queued (the server calls it on stop)."""
        self.states.close()
        self.beside.close()

    def reset(self, channel_id: str) -> bool:
        existed = self.erase(channel_id)
        log.info("injection state reset", extra={"channel": channel_id, "existed": existed})
        return existed

    def erase(self, channel_id: str) -> bool:
        """The channel's whole state (turns, query context, focus votes, blocks, replies,
        speakers, its trace and capture's last message), as ``reset`` drops it, unlogged;
        whether it had one."""
        existed = self.states.reset(channel_id)
        self.trace.forget(channel_id)
        if self.capture is not None:
            self.capture.reset(channel_id)
        return existed

    def write_waiting(self) -> None:
        """The turns kept for a shared store away (their state and captures) are written
        now (Unavailable while it still is)."""
        self.states.write_waiting()

    def refresh(self, channel_id: str) -> None:
        """The channel's memory copy is read again from the store on its next turn."""
        self.states.drop(channel_id)

    def observe(self, channel_id: str, history: list[Message], keep: int,
                agent_id: str = "") -> list[int]:
        """A history pruned for the channel: only the blocks it still holds stay in view,
        and the assistant's reply it ends with joins the query context (with its focus
        votes). Returns the turns of the channel's blocks released."""
        digests = {self.signer.mac_of(m.content) for m in history}
        reply = kept_text(last_reply(history, self.signer.is_block), self.holds_secret)
        config = self.config.get().injection_for(agent_id)
        with self.states.locked(channel_id) as state:
            viewer = state.viewer(agent_id)
            last = state.recent[-1] if state.recent else None
            in_view = sorted(state.injected)
        votes: tuple[tuple[str, float], ...] = ()
        if last is not None and reply and last.reply != reply:  # for whom it was asked
            votes = self.conversation.reply_votes(
                config, state.viewer(agent_id, last.speaker), last, in_view, reply)
        gone = self.states.observe(channel_id, {d for d in digests if d}, keep, reply, votes,
                                   last.turn if last is not None else 0)
        if reply:  # analysed here, off the next Inject's path (memoised)
            self.retriever.query_terms(reply)
        if config.query_context_turns > 0 and config.query_context_focus > 0:
            self._ahead(config, state, agent_id)
        if self.capture is not None:
            self.capture.observe(agent_id, channel_id, history, state.turn, config.capture,
                                 "" if viewer.shared_channel else viewer.user_id)
        return gone

    def _ahead(self, config: MemoryInjectionConfig, state: ChannelState, agent_id: str) -> None:
        """The next turn's focus, worked out off the Inject path for the last speaker."""
        with state.lock:
            turn, recent = state.turn, list(state.recent)
            viewer = state.viewer(agent_id, recent[-1].speaker if recent else "")
        taken = self.conversation.around(config, recent, turn + 1, viewer)
        with state.lock:
            if state.turn == turn:
                state.around = (turn, viewer, taken)

    def is_block(self, content: str) -> bool:
        """A block this data dir's server gave out (its marker matches its text)."""
        return self.signer.is_block(content)

    def inject(self, request: InjectRequest, alive: Alive = deadline.alive) -> Injection:
        """Build the block of the channel's next turn and commit it, unless ``alive()`` is
        false at the commit point (then :class:`Abandoned` is raised and nothing is recorded).
        On a shared store, another sidecar's commit of the channel first means building
        again on its state; so does a memory the turn chose erased before its commit."""
        erased = False
        for _ in range(MOVED_ATTEMPTS):
            try:
                return self._inject(request, alive)
            except ChosenErased:
                self.states.drop(request.channel_id)
                erased = self._erased_elsewhere()
            except ChannelMoved:
                self.states.drop(request.channel_id)
                erased = False
        if erased:
            raise Unavailable("memories this turn chose were erased for good while it was "
                              "built, and this sidecar could not read the store's change feed "
                              "to drop them; retry the call once the store answers")
        raise Unavailable(f"channel_id {echo(request.channel_id)} is being injected by other "
                          "sidecars at the same time; retry the call")

    def _erased_elsewhere(self) -> bool:
        """A memory the turn chose is gone: on a shared store another sidecar erased it, and
        this one's indexes drop it once they follow the store (``follow_erasures``, the
        change feed's read) before the turn is built again. True when that read failed."""
        try:
            self.follow_erasures()
        except Unavailable:
            return True  # the next build's commit checks again
        return False

    def _inject(self, request: InjectRequest, alive: Alive) -> Injection:
        start = now_ns()
        if request.source.strip().lower() == SYSTEM_SOURCE:
            return self._skip(request, start, "system_source", request.turn, InjectStats())
        config = self.config.get().injection_for(request.agent_id)
        # The channel's state first: read from the store while no load holds the GIL (each
        # row's step gives it up and waits to take it back).
        self.states.get(request.channel_id)
        if config.enabled:  # cold scopes load beside what comes before the search
            self.retriever.prefetch(Viewer(request.agent_id, request.user_id))
        stats = InjectStats()
        with self.states.locked(request.channel_id) as state:
            turn = next_turn(state.turn, request.turn)
            if turn is None:
                self.states.confirm(state)  # not erased by another sidecar meanwhile
                return self._retry(request, state.reply(), state.turn)
            if not config.enabled:
                result = self._skip(request, start, "disabled", turn, stats)
                self._commit(state, config, result, [], alive, request)
                self._record(request, result, start, [], [])
                return result
            t = now_ns()
            viewer = state.viewer(request.agent_id, request.user_id)
            quiet = self.conversation.quiet(request.text)  # nothing to search for
            view = state.view(turn, _keep(config), config.context_window_depth)
            in_view = state.ids_in(view)
            own, plan, early = ((_nothing(self.embedder.dim), QUIET, _Early()) if quiet
                                else self._own(config, state, turn, viewer, request.text))
            first = 0  # merged's own hits nothing displaces: 0 = all (nothing comes first)
            if plan.steered:  # the first query_context_own_hits that dedup keeps
                first, kept_own = kept_first(own.answers, state, view,
                                             config.semantic_threshold,
                                             config.query_context_own_hits)
                if kept_own >= config.max_total:
                    plan = ALONE  # its own hits fill the block: nothing to add or search
            pool, steered, focused = self._steer(config, request.text, viewer, plan, own,
                                                 in_view, early)
            contextual = merged(own, focused, steered, first)
            stats.below_min_score = own.below_min_score
            stats.stages_us["embed"] = own.embed_us
            stats.stages_us["search"] = max(0, us_since(t) - own.embed_us)  # with the focus
            t = now_ns()
            pinned = pinned_pool(config, viewer, self.memories, self.retriever,
                                 pool.query, self.snapshot, early.pinned)
            stats.stages_us["pinned"] = us_since(t)
            candidates = pinned + contextual
            held: list[TracedDrop] = []
            if self.capture is not None:  # the channel's captures its agent still sees
                shown = self.capture.visible(candidates, request.channel_id, turn, config,
                                             early.held)
                if len(shown) < len(candidates):
                    visible = {id(c) for c in shown}
                    held = [traced_drop(c, DropReason.CAPTURE_IN_VIEW) for c in candidates
                            if id(c) not in visible]
                candidates = shown
            stats.candidates = len(candidates)
            t = now_ns()
            candidates = supersede.resolve(candidates, in_view,
                                           self.retriever.pointing_to, self._embedding_of,
                                           viewer, pool.query)
            deduped = dedup(candidates, state, view, config.semantic_threshold,
                            changed_since_injected)
            stats.deduped_by_id, stats.deduped_semantic = deduped.by_id, deduped.semantic
            kept = deduped.kept
            stats.stages_us["dedup"] = us_since(t)
            t = now_ns()
            # Cleaned once: the block line and the item carry the same content (ids are
            # unique after dedup).
            contents = {c.memory.id: blocks.clean(c.memory.content) for c in kept}
            now = now_us()
            lines = [_line(c, contents[c.memory.id], config, now) for c in kept]
            budgeted = apply_budget(kept, lines, config.max_total, config.max_tokens,
                                    self.tokens, marker_tokens_max(self.tokens))
            stats.dropped_by_budget = budgeted.dropped
            stats.stages_us["budget"] = us_since(t)
            t = now_ns()
            items = [_item(c, contents[c.memory.id]) for c, _ in budgeted.selected]
            pinned_lines = [line for c, line in budgeted.selected if c.section is Section.PINNED]
            contextual_lines = [line for c, line in budgeted.selected
                                if c.section is Section.CONTEXTUAL]
            block = self.signer.seal(blocks.render(pinned_lines, contextual_lines)) if items \
                else ""
            stats.stages_us["format"] = us_since(t)
            stats.pinned_count = sum(1 for i in items if i.section is Section.PINNED)
            stats.contextual_count = len(items) - stats.pinned_count
            if items:
                # Summed over memoised lines: a line recurs across turns (~0.35 ms a block).
                stats.block_tokens = (self.tokens.block(pinned_lines, contextual_lines)
                                      + self.embedder.count_tokens(block[block.rindex("\n") + 1:]))
                result = Injection(block=block, items=items, stats=stats, skip_reason="",
                                   turn=turn)
            else:
                result = self._skip(request, start, "content_free" if quiet
                                    else "capture_in_view" if held and not stats.candidates
                                    else _why_empty(stats), turn, stats)
            t = now_ns()
            chosen = [c for c, _ in budgeted.selected]
            asked = self.conversation.asked(config, plan, turn, request.text, own.text,
                                            pool.answers, request.user_id,
                                            early.holds_secret(request.text, self.holds_secret))
            self._commit(state, config, result, chosen, alive, request, asked, own.text,
                         captured=not quiet)
            stats.stages_us["persist"] = us_since(t)
            if self.trace.enabled:
                floored = own.floored + (steered.floored if steered else [])
                dropped = _drops(floored, held + deduped.dropped, deduped.kept, chosen)
                self._record(request, result, start, chosen, dropped, plan.context, focused,
                             frozenset(c.memory.id for c in own.candidates))
        stats.elapsed_us = us_since(start)
        if items:
            self._trace(request, items, stats)
        return result

    def _own(self, config: MemoryInjectionConfig, state: ChannelState, turn: int,
             viewer: Viewer, text: str) -> tuple[ContextualPool, Plan, _Early]:
        """The turn's own search and its plan. With ``overlap`` this thread runs the model
        while a worker (``beside``) does what needs no vector (``_early``); the same results
        as in order: that work reads the same state (this thread holds the channel's lock
        and changes nothing meanwhile). In order while the machine is busy
        (``Beside.busy``)."""
        if not self.overlap or self.beside.busy():
            own = contextual_pool(config, viewer, text, self.retriever)
            return own, self.conversation.plan(config, state.recent, state.around, turn,
                                               viewer, text, own.answers), _Early()
        job = self.retriever.query_embedding(text)
        tasks = self._early(config, state, turn, viewer, text, job.alone)
        if job.alone:  # it takes every core: nothing beside it (the search overlaps BM25)
            (vector, embed_us), found = timed(job.run), [task() for task in tasks]
        else:
            found, (vector, embed_us) = self.beside.run(tasks, partial(timed, job.run))
        (draft, steered), ahead, pinned, secret, held = found
        early = _Early(ahead, draft, steered, pinned, text, secret, job.model, held)
        own = contextual_pool(config, viewer, text, self.retriever, embedding=vector,
                              ahead=ahead, model=job.model)
        own.embed_us = embed_us
        return own, self.conversation.settle(config, draft, own.answers), early

    def _early(self, config: MemoryInjectionConfig, state: ChannelState, turn: int,
               viewer: Viewer, text: str, alone: bool) -> list[Callable[[], Any]]:
        """What a turn needs that needs no vector, as tasks: the plan's context and focus
        with the BM25 of the search the context would steer; the own search's scope filter
        and BM25; the pinned members; the secret check of the text the channel keeps; what
        its captures hold back. A text that takes every core (``alone``) is searched whole
        once embedded (no ``ahead``)."""
        def planned() -> tuple[Plan, Ahead | None]:
            draft = self.conversation.draft(config, state.recent, state.around, turn, viewer,
                                            text)
            return draft, (contextual_ahead(config, viewer, text, self.retriever,
                                            draft.context)
                           if draft.steered and not alone else None)

        capture = self.capture
        return [
            planned,
            (lambda: None) if alone else partial(contextual_ahead, config, viewer, text,
                                                 self.retriever),
            partial(pinned_members, config, viewer, self.retriever, self.snapshot),
            partial(self.holds_secret, text) if config.query_context_turns > 0
            else lambda: None,
            (lambda: None) if capture is None else partial(capture.held_back,
                                                           state.channel_id, turn, config),
        ]

    def _steer(self, config: MemoryInjectionConfig, text: str, viewer: Viewer, plan: Plan,
               own: ContextualPool, in_view: set[str], early: _Early,
               ) -> tuple[ContextualPool, ContextualPool | None, Focused]:
        """A follow-up's search steered by its context (the same embedding) and the focus's
        offers: (the pool the turn's votes come from, the steered pool, the offers)."""
        if not plan.steered:
            return own, None, NO_FOCUS
        steered = contextual_pool(config, viewer, text, self.retriever, plan.context, own.text,
                                  early.steered, early.model)
        focused = self.conversation.offers(config, plan, Steered(
            text, plan.context, steered.query, steered.candidates, steered.lexical),
            in_view, viewer)
        return steered, steered, focused

    def _commit(self, state: ChannelState, config: MemoryInjectionConfig, result: Injection,
                chosen: list[Candidate], alive: Alive, request: InjectRequest,
                asked: RecentTurn | None = None, own: np.ndarray | None = None,
                captured: bool = True) -> None:
        """The commit point: the turn, the block's ids and the access records are recorded
        only if the caller is still waiting for the reply."""
        if not alive():
            log.info("memory injection abandoned before commit: nothing recorded",
                     extra={"channel": state.channel_id, "turn": result.turn})
            raise Abandoned(f"turn {result.turn} of channel {echo(state.channel_id)} was not "
                            "recorded: the call ended (deadline or cancel) before its reply")
        now = now_us()
        chosen_ids = [c.memory.id for c in chosen]
        entry = Committed(turn=result.turn, ids=chosen_ids,
                          versions=[c.memory.version for c in chosen],
                          embeddings=_rows(chosen, self.embedder.dim),
                          digest=self.signer.mac_of(result.block) or "", reply=result,
                          at_us=now, asked=asked, speaker=state.new_speaker(request.user_id))
        self.retriever.established(chosen_ids)  # the pinned order prefers these from now on
        # State rows, the reply and the access record: one transaction, before the reply.
        capture = None if self.capture is None or not captured else self.capture.on_turn(
            request.agent_id, request.channel_id, request.text, result.turn, now,
            own, config.capture, request.user_id)  # the turn's own embedding, reused
        self.states.commit(state, entry, _keep(config),
                           config.context_window_depth,
                           also=(lambda: self.memories.touch(chosen_ids, now)) if chosen
                           else None, durable=capture,
                           guard=partial(self._not_erased, [c.memory for c in chosen])
                           if chosen else None,
                           owner=(request.agent_id, request.user_id) if request.user_id
                           else None)

    def _not_erased(self, chosen: list[Memory]) -> None:
        """ChosenErased when a memory of the turn was erased for good since it was chosen
        (its rows would bring it back); in the turn's transaction or batch."""
        self.memories.still_there(
            chosen, ChosenErased("a memory of the turn was erased while it was built"))

    def _record(self, request: InjectRequest, result: Injection, start: int,
                chosen: list[Candidate], dropped: list[TracedDrop],
                context: QueryContext = NO_CONTEXT,
                focused: Focused = NO_FOCUS, own: frozenset[str] = frozenset()) -> None:
        """Trace a committed turn (after the commit point: a retry or an abandoned call
        never gets here); a query the PII gate refuses is traced without its text."""
        if not self.trace.enabled:
            return
        traced = trace_turn(request.agent_id, request.text, result.turn, result.skip_reason,
                            us_since(start), chosen, dropped, now_us(), context, focused, own)
        if self.holds_secret(traced.query):
            traced = replace(traced, query="")
        self.trace.record(request.channel_id, traced)

    def _embedding_of(self, memory_id: str) -> np.ndarray | None:
        found = self.retriever.embedding_of(memory_id)
        return found if found is not None else self.memories.embedding(memory_id)

    def _retry(self, request: InjectRequest, last: Injection | None, turn: int) -> Injection:
        log.info("memory injection retry: the committed reply again",
                 extra={"channel": request.channel_id, "turn": turn})
        if last is None:  # committed before replies were kept
            return Injection(block="", items=[], stats=InjectStats(), skip_reason="retry",
                             turn=turn)
        return last

    def _skip(self, request: InjectRequest, start: int, reason: str, turn: int,
              stats: InjectStats) -> Injection:
        stats.elapsed_us = us_since(start)
        log.info(
            "memory injection: nothing injected (%s)", reason,
            extra={"channel": request.channel_id, "agent": request.agent_id, "turn": turn,
                   "reason": reason, "candidates": stats.candidates,
                   "below_min_score": stats.below_min_score,
                   "deduped": stats.deduped_by_id + stats.deduped_semantic,
                   "dropped_by_budget": stats.dropped_by_budget,
                   "elapsed_ms": round(stats.elapsed_us / 1000, 2)},
        )
        return Injection(block="", items=[], stats=stats, skip_reason=reason, turn=turn)

    def _trace(self, request: InjectRequest, items: list[InjectedItem],
               stats: InjectStats) -> None:
        if log.isEnabledFor(logging.DEBUG):
            for item in items:
                log.debug(
                    "injected memory id=%s type=%s section=%s score=%.4f cosine=%.3f%s",
                    item.memory.id, item.memory.type.label, item.section.name.lower(),
                    item.score, item.cosine, " update" if item.is_update else "",
                    extra={"channel": request.channel_id},
                )
        deduped = stats.deduped_by_id + stats.deduped_semantic
        log.info(
            "memory injection: %d pinned + %d contextual = %d total, %d deduped, took %.1fms",
            stats.pinned_count, stats.contextual_count, len(items), deduped,
            stats.elapsed_us / 1000,
            extra={"channel": request.channel_id, "agent": request.agent_id,
                   "pinned": stats.pinned_count, "contextual": stats.contextual_count,
                   "deduped": deduped, "dropped_by_budget": stats.dropped_by_budget,
                   "block_tokens": stats.block_tokens,
                   "elapsed_ms": round(stats.elapsed_us / 1000, 2)},
        )


@dataclass(frozen=True, slots=True)
class _Early:
    """What a turn worked out beside its embedding (``Injector._early``); empty: nothing."""

    own: Ahead | None = None  # the own search's part before the embedding
    draft: Plan = ALONE  # the plan before the own search's hits
    steered: Ahead | None = None  # the steered search's part before the embedding
    pinned: list[Memory] | None = None  # the pinned members
    text: str = ""
    secret: bool | None = None  # whether ``text`` holds a secret
    model: object | None = None  # the model of the turn's embedding
    held: HeldBack | None = None  # what the channel's captures hold back

    def holds_secret(self, text: str, check: HoldsSecret) -> HoldsSecret:
        """``check``, answered from here for ``text``."""
        if self.secret is None or text != self.text:
            return check
        known = self.secret
        return lambda t: known if t == text else check(t)


def _line(candidate: Candidate, content: str, config: MemoryInjectionConfig,
          now_us: int) -> str:
    if candidate.is_update:
        content = "(updated) " + content
    if config.item_age:
        content += " " + age_note(candidate.memory.created_at, now_us,
                                  config.item_age_date_days)
    return blocks.line_for(candidate.memory.type, content)


def _item(candidate: Candidate, content: str) -> InjectedItem:
    return InjectedItem(memory=candidate.memory, section=candidate.section, content=content,
                        score=candidate.score, cosine=candidate.cosine,
                        is_update=candidate.is_update)


def _drops(floored: list[Hit], held: list[TracedDrop], kept: list[Candidate],
           chosen: list[Candidate]) -> list[TracedDrop]:
    """What the turn left out, each memory once and never one it injected: what capture,
    dedup and the budget held back, then the floor's cuts best first (the trace keeps the
    first MAX_DROPPED: the ones that explain the turn). A memory the turn's own search and
    its steered search both cut is listed at its better score."""
    selected = {id(c) for c in chosen}
    out = held + [traced_drop(c, DropReason.BUDGET) for c in kept if id(c) not in selected]
    seen = {c.memory.id for c in chosen}
    cut = sorted(floored, key=lambda h: -h.score)
    out.extend(TracedDrop(h.memory.id, DropReason.FLOOR, h.cosine, h.score) for h in cut)
    once: list[TracedDrop] = []
    for drop in out:
        if drop.memory_id not in seen:
            seen.add(drop.memory_id)
            once.append(drop)
    return once


def _nothing(dim: int) -> ContextualPool:
    """The contextual pool of a content-free turn: not searched (not embedded either)."""
    zero = np.zeros(dim, np.float32)
    return ContextualPool([], 0, zero, zero, 0)


def _rows(chosen: list[Candidate], dim: int) -> np.ndarray:
    if not chosen:
        return np.zeros((0, dim), dtype=np.float32)
    return np.vstack([c.embedding for c in chosen]).astype(np.float32, copy=False)


def _why_empty(stats: InjectStats) -> str:
    if stats.candidates == 0:
        return "below_min_score" if stats.below_min_score else "no_candidates"
    if stats.dropped_by_budget:
        return "budget"
    return "all_deduped"


def _keep(config: MemoryInjectionConfig) -> int | None:
    """Blocks the agent keeps; None when it never prunes them (the depth bounds the view)."""
    return config.max_injected_blocks_in_history if config.history_pruned else None
