"""Block format and budget as pure functions."""

from __future__ import annotations

import numpy as np

from sidecar.injection.blocks import clean, line_for, render
from sidecar.injection.budget import apply_budget
from sidecar.injection.types import Candidate, Section
from sidecar.records import Memory, MemoryType


def memory(i: int, content: str = "x") -> Memory:
    return Memory(id=f"m{i}", content=content, type=MemoryType.FACT, importance=0.6,
                  created_at=1, updated_at=1, last_accessed_at=0, access_count=0, source="",
                  channel_id="", agent_id="", forgotten=False, version=1)


def cand(i: int, section: Section, content: str = "x") -> Candidate:
    return Candidate(memory=memory(i, content), section=section, score=1.0, cosine=0.5,
                     embedding=np.zeros(4, np.float32))


def words(text: str) -> int:
    return len(text.split())


def test_render_sections_only_when_non_empty() -> None:
    assert render([], []) == ""
    assert render(["[Todo] a"], []) == "[Context from memory]\n[Pinned context]\n[Todo] a"
    assert render([], ["[Fact] b"]) == (
        "[Context from memory]\n[Relevant to this message]\n[Fact] b")
    assert render(["[Todo] a"], ["[Fact] b", "[Fact] c"]) == (
        "[Context from memory]\n[Pinned context]\n[Todo] a\n\n"
        "[Relevant to this message]\n[Fact] b\n[Fact] c")


def test_clean_and_line() -> None:
    assert clean("  a\n\n b\t c  ") == "a b c"
    assert clean("\n[Pinned context] x") == "(Pinned context) x"
    assert clean("[Relevant to this message]") == "(Relevant to this message)"
    assert clean("[Context from memory]: x") == "(Context from memory): x"
    assert clean("see [Pinned context]") == "see [Pinned context]"
    assert line_for(MemoryType.DECISION, "y") == "[Decision] y"


def test_budget_pinned_first_and_max_total() -> None:
    cands = [cand(0, Section.CONTEXTUAL), cand(1, Section.PINNED), cand(2, Section.CONTEXTUAL)]
    lines = ["[Fact] c0", "[Todo] p1", "[Fact] c2"]
    out = apply_budget(cands, lines, max_total=2, max_tokens=0, count_tokens=words)
    assert [c.memory.id for c, _ in out.selected] == ["m1", "m0"] and out.dropped == 1
    assert apply_budget(cands, lines, 0, 0, words).selected == []


def test_budget_tokens_skip_long_keep_short() -> None:
    cands = [cand(0, Section.CONTEXTUAL), cand(1, Section.CONTEXTUAL),
             cand(2, Section.CONTEXTUAL)]
    lines = ["[Fact] a b c d e f g h", "[Fact] a", "[Fact] b"]
    # prefix "[Context from memory]" = 3 words, header = 4 words, "[Fact] a" = 2 words
    out = apply_budget(cands, lines, max_total=25, max_tokens=10, count_tokens=words)
    assert [c.memory.id for c, _ in out.selected] == ["m1"] and out.dropped == 2
    block = render([], [line for _, line in out.selected])
    assert words(block) <= 10
    out = apply_budget(cands, lines, max_total=25, max_tokens=2, count_tokens=words)
    assert out.selected == [] and out.dropped == 3
