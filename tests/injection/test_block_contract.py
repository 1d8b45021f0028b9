"""The block headers the server writes are the ones the proto documents (block.proto), so a
client can read them from the descriptors instead of hard-coding them."""

from __future__ import annotations

from memsidecar.v1 import block_pb2
from memsidecar_client import BLOCK_PREFIX as CLIENT_PREFIX

from sidecar.injection.blocks import BLOCK_PREFIX, CONTEXTUAL_HEADER, PINNED_HEADER


def documented(name: str) -> str:
    value = block_pb2.BlockHeader.DESCRIPTOR.values_by_name[name]
    return str(value.GetOptions().Extensions[block_pb2.text])


def test_server_headers_match_the_proto() -> None:
    assert documented("BLOCK_HEADER_CONTEXT") == BLOCK_PREFIX
    assert documented("BLOCK_HEADER_PINNED") == PINNED_HEADER
    assert documented("BLOCK_HEADER_RELEVANT") == CONTEXTUAL_HEADER


def test_python_client_prefix_matches_the_proto() -> None:
    assert CLIENT_PREFIX == documented("BLOCK_HEADER_CONTEXT")


def test_every_header_value_has_its_text() -> None:
    values = block_pb2.BlockHeader.DESCRIPTOR.values
    assert [v.name for v in values if not documented(v.name)] == ["BLOCK_HEADER_UNSPECIFIED"]
