"""History tools of the persistence ADR (Option D): prune old blocks, render a transcript.

Pure functions over ``(role, content)`` messages; linear in the history length. A message is
an injection block when ``is_block(content)`` says so (the server checks the block's marker,
whatever the role).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from sidecar.injection.blocks import BLOCK_PREFIX

IsBlock = Callable[[str], bool]

_DEFUSED = "(" + BLOCK_PREFIX[1:-1] + ")"


class Role(IntEnum):
    USER = 1
    ASSISTANT = 2
    SYSTEM = 3
    TOOL = 4


LABELS: dict[Role, str] = {
    Role.USER: "User",
    Role.ASSISTANT: "Assistant",
    Role.SYSTEM: "System",
    Role.TOOL: "Tool",
}


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Pruned:
    messages: list[Message]
    removed: list[int]  # indices into the input, ascending


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    blocks_skipped: int


def prune_history(messages: list[Message], max_keep: int, is_block: IsBlock) -> Pruned:
    """Remove injection blocks to make room for the incoming one.

    ``max_keep`` 0 removes every block (ephemeral mode). Otherwise, when there are at least
    ``max_keep`` blocks, the oldest ``count - max_keep + 1`` go, so that with the new block
    appended at most ``max_keep`` remain. Every other message is kept, in order.
    """
    if max_keep < 0:
        raise ValueError("max_keep must be >= 0")
    blocks = [i for i, message in enumerate(messages) if is_block(message.content)]
    if max_keep == 0:
        removed = blocks
    elif len(blocks) >= max_keep:
        removed = blocks[: len(blocks) - max_keep + 1]
    else:
        removed = []
    if not removed:
        return Pruned(messages=list(messages), removed=[])
    gone = set(removed)
    kept = [message for i, message in enumerate(messages) if i not in gone]
    return Pruned(messages=kept, removed=removed)


def last_reply(messages: list[Message], is_block: IsBlock) -> str:
    """The assistant messages after the history's last user message (blocks aside), joined
    with newlines: the reply to the last turn ("" when the history does not end with one)."""
    reply: list[str] = []
    for message in reversed(messages):
        if message.role is Role.USER and not is_block(message.content):
            break
        if message.role is Role.ASSISTANT:
            reply.append(message.content)
    else:
        return ""
    return "\n".join(reversed(reply))


def render_transcript(messages: list[Message], is_block: IsBlock) -> Transcript:
    """``User: ...`` / ``Assistant: ...`` / ``System: ...`` / ``Tool: ...`` lines, blocks left out.

    The block prefix inside an ordinary message (quoted, or a forged or edited block) is
    written ``(Context from memory)``, so the transcript never contains a live header.
    """
    lines: list[str] = []
    skipped = 0
    for message in messages:
        if is_block(message.content):
            skipped += 1
            continue
        # The prefix quoted inside a message is defused so the compactor never sees it.
        content = message.content.replace(BLOCK_PREFIX, _DEFUSED)
        lines.append(f"{LABELS[message.role]}: {content}")
    return Transcript(text="\n".join(lines), blocks_skipped=skipped)
