"""The start-up heap kept out of Python's cyclic garbage collector.

At 100k memories the mirror, the indexes and the records are ~280k tracked objects that live
as long as the server; a full collection walks all of them (0.25-0.3 s, holding the GIL)
inside whichever call happened to trigger it. ``freeze_start_up`` moves what is alive after
start-up to the permanent generation, never scanned; objects created later are collected as
usual. It costs nothing at start (no collection first: start-up leaves little garbage, and
frozen garbage is only memory).
"""

from __future__ import annotations

import gc


def freeze_start_up() -> None:
    """Exempt every object alive now from later collections."""
    gc.freeze()


def unfreeze() -> None:
    """Return the exempted objects to the collector (on close: they may become garbage)."""
    gc.unfreeze()
