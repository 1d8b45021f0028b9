"""Memoised block token counts equal counting the rendered block (real tokenizer)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.embedding import Embedder
from sidecar.injection.blocks import clean, line_for, render
from sidecar.injection.tokens import TokenMemo
from sidecar.records import MemoryType

_PIECES = st.sampled_from([
    "hello", "world", "Ünïcödé", "naïve café", "東京タワー", "emoji 🙂 ok", "a\tb", "x\u200by",
    "(updated)", "[Fact]", "[Context from memory]", "[Pinned context]", "C++/C#", "don't",
    "3.14159", "e-mail", "ﬁ ligature", "ÅNGSTRÖM", "\u0301accent", "word" * 30, "-", "\n",
])
_TEXTS = st.lists(_PIECES, min_size=1, max_size=4).map(" ".join)
_TYPES = st.sampled_from(list(MemoryType))


def _lines(items: list[tuple[MemoryType, str]]) -> list[str]:
    return [line_for(t, clean(text)) for t, text in items]


@given(st.lists(st.tuples(_TYPES, _TEXTS), max_size=4),
       st.lists(st.tuples(_TYPES, _TEXTS), max_size=6))
@settings(max_examples=80, deadline=None)
def test_block_count_equals_counting_the_block(
        embedder: Embedder, pinned: list[tuple[MemoryType, str]],
        contextual: list[tuple[MemoryType, str]]) -> None:
    memo = TokenMemo(embedder.count_tokens, max_pieces=8)  # small: the reset runs too
    p, c = _lines(pinned), _lines(contextual)
    for _ in range(2):  # cold, then answered from the memo
        assert memo.block(p, c) == embedder.count_tokens(render(p, c))


def test_memo_is_bounded(embedder: Embedder) -> None:
    memo = TokenMemo(embedder.count_tokens, max_pieces=3)
    for i in range(10):
        assert memo(f"line number {i}") == embedder.count_tokens(f"line number {i}")
    assert len(memo._memo) <= 3
