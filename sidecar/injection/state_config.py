"""The ``[injection]`` section: limits on per-channel injection state."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob

DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class ChannelStateConfig:
    channel_state_ttl: float = field(default=30.0 * DAY_S, metadata=knob(
        "Seconds a channel may stay idle (no Inject) before the sweep drops its injection "
        "state and owner; 0 = keep channel state forever.", ge=0))
    sweep_interval_s: float = field(default=3600.0, metadata=knob(
        "Seconds between two sweeps for idle channels.", ge=1, le=7 * DAY_S, restart=True))
    trace_turns: int = field(default=50, metadata=knob(
        "Committed turns kept per channel in the injection trace (GetInjectionTrace, the "
        "admin page); in memory only, empty after a restart; 0 = no trace.", ge=0, le=1000))
