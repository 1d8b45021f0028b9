"""Token counts of block pieces, memoised: a memory's line recurs across turns and channels.

A block's count is the sum of its pieces' counts (prefix, headers, lines): the separators
are whitespace, which the BERT tokenizer never merges across (tested against counting the
rendered block).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from sidecar.injection.blocks import BLOCK_PREFIX, CONTEXTUAL_HEADER, PINNED_HEADER

CountTokens = Callable[[str], int]
# Distinct pieces remembered; the memo is dropped when full (a few MB of lines at most).
MAX_PIECES = 20_000


class TokenMemo:
    """``count(text)`` memoised by the exact text; thread-safe."""

    def __init__(self, count: CountTokens, max_pieces: int = MAX_PIECES) -> None:
        self._count = count
        self._max = max_pieces
        self._memo: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        found = self._memo.get(text)
        if found is not None:
            return found
        tokens = self._count(text)
        with self._lock:
            if len(self._memo) >= self._max:
                self._memo.clear()
            self._memo[text] = tokens
        return tokens

    def block(self, pinned: Sequence[str], contextual: Sequence[str]) -> int:
        """Tokens of ``blocks.render(pinned, contextual)``."""
        if not pinned and not contextual:
            return 0
        total = self(BLOCK_PREFIX)
        for header, lines in ((PINNED_HEADER, pinned), (CONTEXTUAL_HEADER, contextual)):
            if lines:
                total += self(header) + sum(self(line) for line in lines)
        return total
