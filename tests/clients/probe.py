"""Which RPCs the server under test implements: tests of not-yet-merged features skip, loudly.

A test that needs, say, Inject calls ``require(running, "Inject")``: it skips with the reason
only when the server answers UNIMPLEMENTED, so it turns itself on the moment the feature merges.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from memsidecar.v1 import injection_pb2 as inj
from memsidecar.v1 import settings_pb2 as st
from memsidecar.v1 import store_pb2 as s

from tests.conftest import Running

PROBES: dict[str, Callable[[Running], Any]] = {
    "Search": lambda r: r.store.Search(s.SearchRequest(query="probe")),
    "Inject": lambda r: r.injection.Inject(inj.InjectRequest(
        agent_id="probe", channel_id="probe", text="probe", source="system")),
    "PruneHistory": lambda r: r.injection.PruneHistory(inj.PruneHistoryRequest()),
    "RenderTranscript": lambda r: r.injection.RenderTranscript(inj.RenderTranscriptRequest()),
    "ResetChannel": lambda r: r.injection.ResetChannel(inj.ResetChannelRequest(channel_id="probe")),
    "GetConfig": lambda r: r.settings.GetConfig(st.GetConfigRequest()),
}


def unimplemented(running: Running, *rpcs: str) -> list[str]:
    """The named RPCs that answer UNIMPLEMENTED on this server (other errors count as there)."""
    missing = []
    for rpc in rpcs:
        try:
            PROBES[rpc](running)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                missing.append(rpc)
    return missing


def require(running: Running, *rpcs: str) -> None:
    """Skip the calling test while any of ``rpcs`` is UNIMPLEMENTED on the server."""
    missing = unimplemented(running, *rpcs)
    if missing:
        pytest.skip(f"PENDING: server answers UNIMPLEMENTED for {', '.join(missing)} "
                    "(feature not merged yet); this test asserts real replies once it is")
