"""The injection pre-hook: pools -> dedup -> budget -> format, with per-channel state
(``pipeline.Injector``); the conversation features it calls live in ``sidecar.conversation``.

Also the history tools of the persistence ADR (Option D): PruneHistory, RenderTranscript.
"""

from sidecar.injection.blocks import BLOCK_PREFIX
from sidecar.injection.marker import BlockSigner

__all__ = ["BLOCK_PREFIX", "BlockSigner"]
