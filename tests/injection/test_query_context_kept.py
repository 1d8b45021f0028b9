"""What a channel keeps of its turns and replies for its query context: nothing of a text that
holds a secret, and then none of the turn's embedding either."""

from __future__ import annotations

import numpy as np

from sidecar.conversation.query_context import MAX_CONTEXT_CHARS, kept_text, kept_turn
from sidecar.vault.pii import find_pii

SECRET = "the wifi password is sunshine"


def holds_secret(text: str) -> bool:
    return bool(find_pii(text))


def test_a_text_with_a_secret_is_kept_as_nothing() -> None:
    assert kept_text(SECRET, holds_secret) == ""
    assert kept_text("Where is the wifi router?", holds_secret) == "Where is the wifi router?"
    assert kept_text("", holds_secret) == ""


def test_the_end_is_kept_and_screened() -> None:
    """Only the kept end is read: a secret cut off before it leaves the rest kept."""
    long = SECRET + ". " + "x " * MAX_CONTEXT_CHARS
    assert kept_text(long, holds_secret) == long[-MAX_CONTEXT_CHARS:]
    assert kept_text("x " * MAX_CONTEXT_CHARS + SECRET, holds_secret) == ""


def test_a_turn_with_a_secret_keeps_its_number_and_votes_only() -> None:
    embedding = np.ones(4, np.float32)
    votes = (("m1", 0.5),)
    turn = kept_turn(7, f"remember: {SECRET}", embedding, holds_secret, votes)
    assert (turn.turn, turn.text, turn.votes) == (7, "", votes)
    assert not turn.embedding.any() and turn.embedding.shape == (4,)
    clean = kept_turn(8, "and the router?", embedding, holds_secret)
    assert clean.text == "and the router?" and clean.embedding is embedding
