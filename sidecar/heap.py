"""The start-up heap kept out of Python's cyclic garbage collector.

At 100k memories the mirror, the indexes and the records are ~280k tracked objects that live
as long as the server; a full collection walks all of them (0.25-0.3 s, holding the GIL)
inside whichever call happened to trigger it. ``freeze_start_up`` moves what is alive after
start-up to the permanent generation, never scanned; objects created later are collected as
usual. It costs nothing at start (no collection first: start-up leaves little garbage, and
frozen garbage is only memory).

Scopes loaded on demand later (``sidecar.retrieval.resident``) are long-lived the same way:
each load's records, postings and edges are frozen once in the indexes (``keep_loaded``), or
the full collections that the heap's growth triggers walk every scope held (100-140 ms with
a few hundred users' scopes, inside whichever call allocates next). Freezing is a constant-
time move of the collector's lists; an evicted scope's objects are freed by their reference
counts as before. What freezing costs is the cyclic garbage not yet collected at that moment,
kept as memory: the calls between loads leave none (a full collection after hundreds of
Injects finds no unreachable object).
"""

from __future__ import annotations

import gc


def freeze_start_up() -> None:
    """Exempt every object alive now from later collections."""
    gc.freeze()


def keep_loaded() -> None:
    """Exempt what a scope's load just put into the indexes (and everything else alive
    now) from later collections."""
    gc.freeze()


def unfreeze() -> None:
    """Return the exempted objects to the collector (on close: they may become garbage)."""
    gc.unfreeze()
