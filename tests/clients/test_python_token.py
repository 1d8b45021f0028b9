"""memsidecar_client sends the bearer token as call metadata (the sidecar has no auth yet, so
a stand-in Settings server records what arrives)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from memsidecar.v1 import settings_pb2
from memsidecar_client import Client


class Recorder:
    def __init__(self) -> None:
        self.seen: list[dict[str, str | bytes]] = []

    def get_config(self, request: settings_pb2.GetConfigRequest,
                   context: grpc.ServicerContext) -> settings_pb2.GetConfigResponse:
        self.seen.append(dict(context.invocation_metadata()))
        return settings_pb2.GetConfigResponse(agent_id=request.agent_id)


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, str]]:
    recorder = Recorder()
    handler = grpc.unary_unary_rpc_method_handler(
        recorder.get_config, request_deserializer=settings_pb2.GetConfigRequest.FromString,
        response_serializer=settings_pb2.GetConfigResponse.SerializeToString)
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("memsidecar.v1.Settings", {"GetConfig": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield recorder, f"127.0.0.1:{port}"
    server.stop(grace=None)


def test_token_is_sent_as_bearer_metadata(recorder: tuple[Recorder, str]) -> None:
    seen, target = recorder
    with Client(target, token="s3cret") as client:
        assert client.get_config("a").agent_id == "a"
    with Client(target) as client:
        client.get_config("b")
    assert seen.seen[0].get("authorization") == "Bearer s3cret"
    assert "authorization" not in seen.seen[1]
