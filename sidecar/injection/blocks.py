"""The injection block: its prefix, its section headers, and how memory content is written in it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sidecar.records import MemoryType

BLOCK_PREFIX = "[Context from memory]"
PINNED_HEADER = "[Pinned context]"
CONTEXTUAL_HEADER = "[Relevant to this message]"

# Anything that could be read as block structure when it starts a line of content.
_HEADERS = (BLOCK_PREFIX, PINNED_HEADER, CONTEXTUAL_HEADER)
_WHITESPACE = re.compile(r"\s+")


def single_line(content: str) -> str:
    """Collapse every run of whitespace (newlines included) to one space and strip."""
    return _WHITESPACE.sub(" ", content).strip()


def neutralise(line: str) -> str:
    """Content may not forge structure: a leading header or type tag loses its brackets."""
    for header in _HEADERS:
        if line.startswith(header):
            return "(" + header[1:-1] + ")" + line[len(header):]
    return line


def clean(content: str) -> str:
    return neutralise(single_line(content))


def line_for(memory_type: MemoryType, content: str) -> str:
    """``[Decision] content`` with content already cleaned."""
    return f"[{memory_type.label.capitalize()}] {content}"


def render(pinned: Sequence[str], contextual: Sequence[str]) -> str:
    """The block from already formatted lines; empty when both sections are empty.

    A header appears only when its section has lines; sections are separated by a blank line.
    """
    if not pinned and not contextual:
        return ""
    sections = []
    if pinned:
        sections.append("\n".join([PINNED_HEADER, *pinned]))
    if contextual:
        sections.append("\n".join([CONTEXTUAL_HEADER, *contextual]))
    return BLOCK_PREFIX + "\n" + "\n\n".join(sections)
