"""The injection pre-hook: pools -> dedup -> budget -> format, with per-channel state.

Also the history tools of the persistence ADR (Option D): PruneHistory, RenderTranscript.
"""

from sidecar.injection.blocks import BLOCK_PREFIX
from sidecar.injection.marker import BlockSigner
from sidecar.injection.pipeline import Injector

__all__ = ["BLOCK_PREFIX", "BlockSigner", "Injector"]
