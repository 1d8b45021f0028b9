"""The hooks Inject and PruneHistory call: record a turn, hold back what the agent still
sees, capture the assistant replies a history shows, forget a reset channel's view."""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sidecar.capture.drain import Drain
from sidecar.capture.modes import (
    ALL,
    ASSISTANT_ROLE,
    CAPTURE_SOURCE,
    OFF,
    USER_ROLE,
    assistant_key,
    capture_id,
    user_key,
)
from sidecar.capture.repo import CaptureRepo, Pending
from sidecar.errors import Unavailable
from sidecar.records import MemoryDraft, MemoryType
from sidecar.timing import now_us
from sidecar.vault.screen import Screen

if TYPE_CHECKING:
    from sidecar.injection.config import MemoryInjectionConfig
    from sidecar.injection.history import Message
    from sidecar.injection.types import Candidate

log = logging.getLogger(__name__)

# The refusal of a capture while the backlog of pending ones is full (``Drain.full``).
QUEUE_FULL = "QUEUE_FULL"
# Channels whose latest message is remembered (the context of their next captured turn).
MAX_CHANNELS = 4096
# A candidate whose words overlap a capture not written yet this much says the same thing
# (the near-duplicate gate would resolve the capture to it).
SAME_WORDS = 0.8
_WORD = re.compile(r"\w+")


# What a channel's captures hold back: the memories, and the texts not written yet.
HeldBack = tuple[set[str], list[str]]
# ``HeldBack`` of a shared store away (compared by identity).
AWAY: HeldBack = (set(), [])


def _since(turn: int, config: MemoryInjectionConfig) -> int:
    """The first turn whose captures may still be in the agent's view."""
    return 0 if config.history_pruned else turn - config.context_window_depth


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def same_words(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a) and bool(b) and len(a & b) / len(a | b) >= SAME_WORDS
IsBlock = Callable[[str], bool]


class Capture:
    def __init__(self, repo: CaptureRepo, drain: Drain, screen: Screen,
                 is_block: IsBlock) -> None:
        self.repo = repo
        self.drain = drain
        self.screen = screen
        self.is_block = is_block
        self.refused: Counter[str] = Counter()  # refused on the reply path, by reason
        # channel -> the latest message seen: (its turn, -1 = a history's; text; the one before)
        self._last: OrderedDict[str, tuple[int, str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def outcomes(self) -> dict[str, int]:
        """Captures since start by outcome (stored, deduplicated, or a refusal's reason)."""
        return dict(self.drain.outcomes + self.refused)

    # --- Inject ---------------------------------------------------------------------------

    def on_turn(self, agent_id: str, channel_id: str, text: str, turn: int, at_us: int,
                query: np.ndarray | None, mode: str,
                user_id: str = "") -> Callable[[], None] | None:
        """What the turn's transaction writes to capture it (None: nothing). ``query``: the
        turn's query embedding, if Inject computed one (reused as its vector when it serves).
        The memory belongs to ``user_id``, or without one is private to the channel."""
        if mode == OFF:
            return None
        context = self._remember(channel_id, text, turn) if self.drain.index == "pair" else ""
        draft = MemoryDraft(content=text, type=MemoryType.OBSERVATION, source=CAPTURE_SOURCE,
                            channel_id=channel_id, agent_id=agent_id, user_id=user_id,
                            channel_private=not user_id)
        reason = QUEUE_FULL if self.drain.full() else self.screen.refusal(draft)
        if reason:
            self._refused(reason, channel_id, turn, USER_ROLE)
            return None
        key = user_key(turn, at_us)
        row = Pending(channel_id, key, agent_id, USER_ROLE, turn, text, context, at_us,
                      capture_id(agent_id, channel_id, key), query, user_id)

        def write() -> None:
            self._add([row])

        return write

    def visible(self, candidates: list[Candidate], channel_id: str, turn: int,
                config: MemoryInjectionConfig, ahead: HeldBack | None = None,
                ) -> list[Candidate]:
        """``candidates`` without the channel's captures its agent still has in view: while
        a history sent to PruneHistory shows their text, or (an agent that does not prune)
        for ``context_window_depth`` turns. A capture the near-duplicate gate resolved to
        another memory holds that memory; one not written yet holds a candidate saying the
        same words. ``ahead``: ``held_back`` of the turn, read before the candidates were
        known."""
        if not candidates or (config.capture == OFF and not any(
                c.memory.source == CAPTURE_SOURCE for c in candidates)):
            return candidates
        try:
            held, pending = ahead if ahead is not None else self.repo.held_among(
                channel_id, _since(turn, config), [c.memory.id for c in candidates])
        except Unavailable:  # a shared store away: none of the channel's own captures
            held, pending = AWAY
        if held is AWAY[0]:
            return [c for c in candidates if not (c.memory.source == CAPTURE_SOURCE
                                                  and c.memory.channel_id == channel_id)]
        said = [words(text) for text in pending]
        return [c for c in candidates if c.memory.id not in held
                and not any(same_words(words(c.memory.content), w) for w in said)]

    def held_back(self, channel_id: str, turn: int,
                  config: MemoryInjectionConfig) -> HeldBack | None:
        """What ``visible`` reads of the store for any candidates of the turn (None: it
        would read nothing, capture being off)."""
        if config.capture == OFF:
            return None
        try:
            return self.repo.held_since(channel_id, _since(turn, config))
        except Unavailable:
            return AWAY

    # --- PruneHistory ---------------------------------------------------------------------

    def observe(self, agent_id: str, channel_id: str, kept: Sequence[Message], turn: int,
                mode: str, user_id: str = "") -> None:
        """A history of the channel: its captures no longer shown are released (except the
        latest turn's), and with ``mode`` "all" the assistant replies not captured yet are
        (``user_id``'s: the one the channel's agent talks to; '' = private to the channel).
        A shared store away skips it (the next history says it again)."""
        try:
            self._observe(agent_id, channel_id, kept, turn, mode, user_id)
        except Unavailable as err:
            log.warning("store away: the history's captures are not updated",
                        extra={"channel": channel_id, "error": err.message})

    def _observe(self, agent_id: str, channel_id: str, kept: Sequence[Message], turn: int,
                 mode: str, user_id: str) -> None:
        last = next((m.content for m in reversed(kept) if not self.is_block(m.content)), None)
        if last is not None:
            self._remember(channel_id, last, -1)
        held = self.repo.held(channel_id)
        if not held and mode != ALL:  # nothing to release, no reply to capture
            return
        texts = [(m.role.name.lower(), m.content) for m in kept if not self.is_block(m.content)]
        shown = "\n".join(content.strip() for _, content in texts)
        gone = [h.key for h in held if h.turn < turn and h.content.strip() not in shown]
        replies = self._replies(agent_id, channel_id, texts, turn, user_id) if mode == ALL else []
        if replies and self.drain.full():
            self._refused(QUEUE_FULL, channel_id, turn, ASSISTANT_ROLE)
            replies = []
        if gone or replies:  # a history that changes nothing writes nothing
            with self.repo.db.transaction():
                self.repo.release(channel_id, gone)
                self._add(replies)

    def _replies(self, agent_id: str, channel_id: str, texts: list[tuple[str, str]],
                 turn: int, user_id: str) -> list[Pending]:
        replies = [(i, content) for i, (role, content) in enumerate(texts)
                   if role == ASSISTANT_ROLE and content.strip()]
        keys = [assistant_key(content) for _, content in replies]
        known = self.repo.known(channel_id, keys)
        at = now_us()
        rows: list[Pending] = []
        for (i, content), key in zip(replies, keys, strict=True):
            if key in known:
                continue
            known.add(key)
            draft = MemoryDraft(content=content, type=MemoryType.OBSERVATION,
                                source=CAPTURE_SOURCE, channel_id=channel_id,
                                agent_id=agent_id, user_id=user_id,
                                channel_private=not user_id)
            reason = self.screen.refusal(draft)
            if reason:  # recorded without its text, so it is judged once
                self._refused(reason, channel_id, turn, ASSISTANT_ROLE)
                rows.append(Pending(channel_id, key, agent_id, ASSISTANT_ROLE, turn, "", "",
                                    at, "", None, user_id))
                continue
            context = texts[i - 1][1] if i and self.drain.index == "pair" else ""
            rows.append(Pending(channel_id, key, agent_id, ASSISTANT_ROLE, turn, content,
                                context, at, capture_id(agent_id, channel_id, key), None,
                                user_id))
        return rows

    # --- ResetChannel ---------------------------------------------------------------------

    def reset(self, channel_id: str) -> None:
        """A new conversation: nothing of the old one is in its history any more."""
        self.forget(channel_id)
        with self.repo.db.transaction():
            self.repo.release_all(channel_id)

    def forget(self, channel_id: str) -> None:
        """The channel's last message held in memory is dropped (the store is left alone)."""
        with self._lock:
            self._last.pop(channel_id, None)

    def names(self) -> list[str]:
        """The channels whose last message is held in memory."""
        with self._lock:
            return list(self._last)

    # --- helpers --------------------------------------------------------------------------

    def _add(self, rows: list[Pending]) -> None:
        """In the caller's transaction, in a savepoint: a failure loses the capture, never
        the turn."""
        if not rows:
            return
        try:
            with self.repo.db.transaction():
                for row in rows:
                    if not row.memory_id:
                        self.repo.add_refused(row)
                    else:
                        self.repo.put(row)
        except Unavailable:
            raise
        except Exception:
            self.refused["WRITE_FAILED"] += len(rows)
            log.exception("capture not recorded (the turn is)",
                          extra={"channel": rows[0].channel_id, "captures": len(rows)})
            return
        self.drain.queued(len(rows))
        self.drain.wake()

    def _remember(self, channel_id: str, text: str, turn: int) -> str:
        """Remember ``text`` as the channel's latest message; returns the one before (a user
        turn built again, e.g. after another sidecar committed the channel first, keeps
        its own)."""
        with self._lock:
            last = self._last.pop(channel_id, None)
            before = "" if last is None else last[1]
            if last is not None and turn >= 0 and last[0] >= 0 and last[1] == text:
                before = last[2]
            self._last[channel_id] = (turn, text, before)
            while len(self._last) > MAX_CHANNELS:
                self._last.popitem(last=False)
            return before

    def _refused(self, reason: str, channel_id: str, turn: int, role: str) -> None:
        self.refused[reason] += 1
        log.info("capture refused", extra={"reason": reason, "channel": channel_id,
                                           "turn": turn, "role": role,
                                           "refused": self.refused[reason]})
