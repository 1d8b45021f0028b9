"""Which scopes the indexes hold: each loaded on first use, the least recently used evicted
once the held ones pass the memory budget (pinned scopes stay).

- A call that reads scopes (``using``) loads the cold ones before it reads: a cold scope
  answers its first call from all of its rows. Concurrent first calls of one scope load it
  once; the others wait for that load. A load reads the store (``read``: rows, edges,
  tokens) holding no lock, then puts what it read into the indexes under the read side: an
  eviction, and the calls queued behind it, never wait for the store.
- A write to a scope being loaded is applied after the load's rows (``route``), in order, so
  the load's snapshot never hides it; a write to a cold scope is not applied (the store has
  it; it is read with the scope).
- Eviction takes the write side of a readers-writer lock whose read side every call that
  reads or changes the indexes holds: it never runs during a search, a load or a write's
  index update. It runs after a call, on the calling thread, when the held bytes pass the
  budget (``budget``, re-read each time).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum

from sidecar.retrieval.resident.keys import SHARED, ScopeKey, label
from sidecar.retrieval.vector.rwlock import RWLock

log = logging.getLogger(__name__)


class Route(Enum):
    APPLY = "apply"  # the scope is held: update the indexes now
    DEFERRED = "deferred"  # being loaded: queued behind the load
    COLD = "cold"  # not held: the store has it, read when the scope is loaded


@dataclass
class _Loading:
    done: threading.Event = field(default_factory=threading.Event)
    pending: list[Callable[[], None]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ResidentStats:
    resident: int
    resident_bytes: int
    budget_bytes: int
    loads: int
    evictions: int
    load_seconds: float  # summed over every load
    held: tuple[tuple[str, int], ...]  # (scope, bytes), most recently used first (at most 20)

    def figures(self) -> dict[str, float]:
        """The counters for the metrics (``sidecar.metrics.registry``)."""
        return {"scopes": self.resident, "bytes": self.resident_bytes,
                "budget_bytes": self.budget_bytes, "loads": self.loads,
                "evictions": self.evictions, "load_seconds": self.load_seconds}


class ResidentScopes:
    def __init__(
        self, read: Callable[[ScopeKey], Callable[[], None]],
        evict: Callable[[ScopeKey], None], size: Callable[[ScopeKey], int],
        budget: Callable[[], int], pinned: Callable[[], Collection[ScopeKey]],
        bound: Callable[[], int] | None = None,
    ) -> None:
        """``read`` reads a scope's stored rows (called holding no lock of this object) and
        returns what puts them into the indexes (called under the read side); ``evict``
        takes them out, ``size`` is the bytes a held scope takes; ``budget`` and ``pinned``
        are read at each eviction (the shared scope is always pinned); ``bound``, when
        given, is at least the bytes of every held scope and costs no walk over them (the
        check after each call that nothing needs evicting)."""
        self._read, self._evict, self._size, self._bound = read, evict, size, bound
        self._budget, self._pinned = budget, pinned
        self._mutex = threading.Lock()
        self._held: OrderedDict[ScopeKey, None] = OrderedDict()  # least recently used first
        self._loading: dict[ScopeKey, _Loading] = {}
        self._codes: dict[ScopeKey, int] = {}
        self._rw = RWLock()
        self._depth = threading.local()
        self.loads = self.evictions = 0
        self.load_seconds = 0.0
        # Off until the indexes were filled from a store (``adopt``): before, every scope
        # counts as held (an engine fed only by its listener, e.g. in tests).
        self.on_demand = False

    # --- codes ------------------------------------------------------------------------------

    def code(self, key: ScopeKey) -> int:
        """A small int naming ``key`` for as long as the process runs (BM25 groups)."""
        code = self._codes.get(key)
        if code is None:
            with self._mutex:
                code = self._codes.setdefault(key, len(self._codes))
        return code

    # --- reading ----------------------------------------------------------------------------

    def held(self, key: ScopeKey) -> bool:
        return not self.on_demand or key in self._held

    def cold(self, keys: Collection[ScopeKey]) -> list[ScopeKey]:
        """Those of ``keys`` neither held nor being loaded (none before ``adopt``)."""
        if not self.on_demand:
            return []
        with self._mutex:
            return [k for k in dict.fromkeys(keys) if k not in self._held
                    and k not in self._loading]

    def load(self, key: ScopeKey) -> None:
        """``key`` held on return (loaded now, or by the load in progress); evicts nothing."""
        self._ensure(key)

    @contextmanager
    def reading(self, ahead: bool = False) -> Iterator[None]:
        """The read side: no eviction meanwhile (reentrant on one thread). ``ahead``: before
        an eviction that waits (a load's put: a call holding the read side may wait for
        that load, and the eviction for that call)."""
        depth = getattr(self._depth, "n", 0)
        if depth == 0:
            self._rw.acquire_read(ahead=ahead)
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            if depth == 0:
                self._rw.release_read()

    @contextmanager
    def using(self, keys: Collection[ScopeKey], evict: bool = True) -> Iterator[None]:
        """``keys`` held (loaded first when cold) for the body; eviction afterwards
        (``evict`` False: left to the next call, e.g. inside a write transaction).

        The cold scopes are loaded before the read side is taken (a load's reads of the
        store then hold back no eviction), and checked again under it: one evicted in
        between is loaded again there."""
        if not getattr(self._depth, "n", 0):
            for key in keys:
                self._ensure(key)
        with self.reading():
            for key in keys:
                self._ensure(key)
            yield
        if evict:
            self.evict_over_budget()

    def adopt(self, keys: Collection[ScopeKey]) -> None:
        """Scopes whose rows were put into the indexes by a bulk load (start-up); from here
        on the others are loaded on demand."""
        with self._mutex:
            for key in keys:
                self._held[key] = None
            self.on_demand = True

    def _ensure(self, key: ScopeKey) -> None:
        while self.on_demand:
            with self._mutex:
                if key in self._held:
                    self._held.move_to_end(key)
                    return
                loading = self._loading.get(key)
                mine = loading is None
                if loading is None:
                    loading = self._loading[key] = _Loading()
            if not mine:
                loading.done.wait()
                continue  # held now, or that load failed and this call tries again
            self._load_held(key, loading)
            return

    def _load_held(self, key: ScopeKey, loading: _Loading) -> None:
        begin = time.perf_counter()
        try:
            put = self._read(key)
            with self.reading(ahead=True):
                put()
                while True:  # writes that arrived during the load, in order, then held
                    with self._mutex:
                        queued, loading.pending = loading.pending, []
                        if not queued:
                            self._held[key] = None
                            del self._loading[key]
                            break
                    for apply in queued:
                        apply()
        except BaseException:
            with self._mutex:
                self._loading.pop(key, None)
            with self.reading(ahead=True):
                self._evict(key)  # the rows put so far
            loading.done.set()
            raise
        loading.done.set()
        elapsed = time.perf_counter() - begin
        with self._mutex:
            self.loads += 1
            self.load_seconds += elapsed
        log.debug("scope loaded", extra={"scope": label(key), "bytes": self._size(key),
                                         "elapsed_ms": round(elapsed * 1000, 2)})

    # --- writes -----------------------------------------------------------------------------

    def route(self, key: ScopeKey, apply: Callable[[], None]) -> Route:
        """Where a write to ``key`` goes; DEFERRED: ``apply`` runs after the load. Call
        inside ``reading``, and run ``apply`` there on APPLY."""
        with self._mutex:
            if key in self._held or not self.on_demand:
                return Route.APPLY
            loading = self._loading.get(key)
            if loading is None:
                return Route.COLD
            loading.pending.append(apply)
            return Route.DEFERRED

    # --- eviction ---------------------------------------------------------------------------

    def resident_bytes(self) -> int:
        with self._mutex:
            keys = list(self._held)
        return sum(self._size(key) for key in keys)

    def evict_over_budget(self, budget: int | None = None) -> int:
        """Evict the least recently used unpinned scopes until the held bytes fit
        ``budget`` (None: the configured one); the number evicted. Not inside ``reading``
        (it waits for the readers)."""
        if getattr(self._depth, "n", 0):
            return 0
        if budget is None:
            budget = self._budget()
        if (self._bound is not None and self._bound() <= budget
                or self.resident_bytes() <= budget):
            return 0
        pinned = {SHARED, *self._pinned()}
        evicted = 0
        with self._rw.write():
            with self._mutex:
                order = [key for key in self._held if key not in pinned]
            total = self.resident_bytes()
            for key in order:
                if total <= budget:
                    break
                size = self._size(key)
                with self._mutex:
                    del self._held[key]
                self._evict(key)
                total -= size
                evicted += 1
        with self._mutex:
            self.evictions += evicted
        log.debug("scopes evicted", extra={"evicted": evicted, "bytes": total})
        return evicted

    def stats(self) -> ResidentStats:
        with self._mutex:
            keys = list(self._held)
            loads, evictions, seconds = self.loads, self.evictions, self.load_seconds
        sizes = [(label(key), self._size(key)) for key in reversed(keys)]
        return ResidentStats(len(keys), sum(size for _, size in sizes), self._budget(), loads,
                             evictions, seconds, tuple(sizes[:20]))
