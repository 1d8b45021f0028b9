"""Capture: the turns the sidecar already sees (Inject's user text, PruneHistory's assistant
replies) written as OBSERVATION memories of the agent's scope, with no call from the agent.

``Capture`` is the one entry point: ``on_turn`` (Inject's commit), ``visible`` (Inject's
candidates), ``observe`` (PruneHistory), ``reset`` (ResetChannel). A captured turn is recorded
in the turn's own transaction (``captures``, pending) and written through the vault's gates by
``Drain``, off the reply path.
"""

from sidecar.capture.capture import Capture
from sidecar.capture.drain import Drain
from sidecar.capture.modes import CAPTURE_SOURCE
from sidecar.injection.config import CAPTURE_MODES

__all__ = ["CAPTURE_MODES", "CAPTURE_SOURCE", "Capture", "Drain"]
