"""Each writer's sequence: the memories one writer (agent, end user, source, channel) wrote, in
the order it wrote them. A memory's position in it says what was "written next to" it whatever
other writers wrote in between (an interleaved import, many agents on one store, an agent's
many users writing at once)."""

from __future__ import annotations

import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence

from sidecar.records import Memory

Writer = tuple[str, str, str, str]


def writer_of(memory: Memory) -> Writer:
    return (memory.agent_id, memory.user_id, memory.source, memory.channel_id)


class WriterSequences:
    """Per writer, the ``Memory.seq`` of its memories ascending. A forgotten memory's seq stays
    until ``compact`` (positions skip it: ``near`` walks over live ones only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seqs: dict[Writer, list[int]] = {}
        self._dead = 0

    def add(self, memories: Sequence[Memory]) -> None:
        with self._lock:
            for m in memories:
                seqs = self._seqs.setdefault(writer_of(m), [])
                if not seqs or seqs[-1] < m.seq:
                    seqs.append(m.seq)  # the usual case: a new write
                elif seqs[bisect_left(seqs, m.seq)] != m.seq:
                    insort(seqs, m.seq)

    def forgot(self, count: int, alive: Callable[[int], bool]) -> None:
        """``count`` memories were forgotten; compacts once they are a quarter of all."""
        with self._lock:
            self._dead += count
            total = sum(len(s) for s in self._seqs.values())
            if self._dead * 4 < total:
                return
            self._seqs = {w: kept for w, seqs in self._seqs.items()
                          if (kept := [s for s in seqs if alive(s)])}
            self._dead = 0

    def near(self, writer: Writer, seq: int, radius: int,
             alive: Callable[[int], bool]) -> list[int]:
        """The seqs of the live memories of ``writer`` within ``radius`` positions of ``seq``
        in its sequence (``seq`` included when live), ascending."""
        with self._lock:
            seqs = self._seqs.get(writer, [])
            at = bisect_left(seqs, seq)
            if at == len(seqs) or seqs[at] != seq:
                return []
            before: list[int] = []
            k = at - 1
            while k >= 0 and len(before) < radius:
                if alive(seqs[k]):
                    before.append(seqs[k])
                k -= 1
            after: list[int] = []
            k = at + 1
            while k < len(seqs) and len(after) < radius:
                if alive(seqs[k]):
                    after.append(seqs[k])
                k += 1
        return [*reversed(before), *([seq] if alive(seq) else []), *after]

    def position(self, writer: Writer, seq: int) -> int:
        """``seq``'s index in ``writer``'s sequence (forgotten ones not yet compacted count)."""
        with self._lock:
            return bisect_left(self._seqs.get(writer, []), seq)
