"""The block marker's remembered verdicts equal the ones worked out afresh."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.injection import marker
from sidecar.injection.blocks import BLOCK_PREFIX
from sidecar.injection.marker import BlockSigner

SECRET = b"k" * 32


def texts(signer: BlockSigner) -> list[str]:
    """Genuine blocks, tampered ones, a forged marker, another dir's, plain text."""
    body = f"{BLOCK_PREFIX}\n[Fact] the staging database is db-7"
    genuine = signer.seal(body)
    return [genuine, genuine.replace("db-7", "db-8"), genuine[:-2] + "0]",
            BlockSigner(b"j" * 32).seal(body), body, "plain text", genuine + "\n",
            signer.seal(BLOCK_PREFIX)]


def test_remembered_verdicts_equal_the_fresh_ones_however_often_asked() -> None:
    signer = BlockSigner(SECRET)
    for _ in range(3):
        for text in texts(signer):
            assert signer.mac_of(text) == signer.checked_mac_of(text)
            assert signer.is_block(text) == (signer.checked_mac_of(text) is not None)
    assert [signer.is_block(t) for t in texts(signer)] == [
        True, False, False, False, False, False, False, True]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=30))
def test_the_memory_stays_bounded_and_exact(bodies: list[str]) -> None:
    signer = BlockSigner(SECRET)
    signer_fresh = BlockSigner(SECRET)
    saved = marker.KNOWN_MAX
    marker.KNOWN_MAX = 4
    try:
        for body in bodies:
            for text in (signer.seal(BLOCK_PREFIX + body), BLOCK_PREFIX + body):
                assert signer.mac_of(text) == signer_fresh.checked_mac_of(text)
                assert len(signer._known) <= marker.KNOWN_MAX
    finally:
        marker.KNOWN_MAX = saved
