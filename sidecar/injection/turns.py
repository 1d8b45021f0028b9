"""Turn numbering: monotonic per channel, a repeated turn is a retry."""

from __future__ import annotations

from sidecar.errors import InvalidArgument

# How far a client-given turn may jump past the channel's last committed turn.
MAX_TURN_STEP = 1_000_000
# Highest turn a channel reaches (SQLite integers are signed 64-bit; 2^53 also stays exact
# in clients whose numbers are doubles).
MAX_TURN = 2**53


def next_turn(last: int, requested: int) -> int | None:
    """The turn to build, or None when ``requested`` repeats the last committed turn (a
    retry: the committed reply is returned again). ``requested`` 0 = the next turn."""
    if requested == 0:
        if last >= MAX_TURN:
            raise InvalidArgument(
                f"the channel reached turn {last}, the highest there is; reset the channel "
                "(ResetChannel) to start it again", field="turn", reason="TURN_OVERFLOW")
        return last + 1
    if last and requested == last:
        return None
    if requested < last:
        raise InvalidArgument(
            f"turn {requested} is before the channel's last turn {last}: turns only grow. "
            f"Send {last} to get that turn's block again, a larger turn, or 0 to let the "
            "server count", field="turn", reason="TURN_BACKWARDS")
    if requested - last > MAX_TURN_STEP or requested > MAX_TURN:
        raise InvalidArgument(
            f"turn {requested} is more than {MAX_TURN_STEP} ahead of the channel's last "
            f"turn {last} (or above {MAX_TURN}); send at most {min(last + MAX_TURN_STEP, MAX_TURN)}"
            ", or 0 to let the server count", field="turn", reason="TURN_TOO_FAR")
    return requested
