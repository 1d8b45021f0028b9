"""Listen address forms, checked before anything binds."""

from __future__ import annotations

import errno
import socket

import pytest

from sidecar.listen import (
    BadListen,
    bind_error,
    check_grpc_listen,
    check_http_listen,
    host_port,
)

GRPC_OK = ["127.0.0.1:0", "127.0.0.1:50051", "[::1]:50051", "localhost:65535", "0.0.0.0:1",
           "unix:relative.sock", "unix:///run/memsidecar.sock", "unix-abstract:memsidecar"]
BAD = ["", "127.0.0.1", ":50051", "127.0.0.1:", "127.0.0.1:-1", "127.0.0.1:99999",
       "127.0.0.1:65536", "127.0.0.1: 80", "127.0.0.1:８０", "127.0.0.1:0x50"]


@pytest.mark.parametrize("listen", GRPC_OK)
def test_grpc_forms_that_bind(listen: str) -> None:
    check_grpc_listen(listen)


@pytest.mark.parametrize("listen", [*BAD, "unix:", "unix://", "unix-abstract:"])
def test_grpc_forms_refused_with_the_flag_named(listen: str) -> None:
    with pytest.raises(BadListen, match=r"expected HOST:PORT \(port 0\.\.65535\) or unix"):
        check_grpc_listen(listen)


def test_http_forms() -> None:
    check_http_listen("")  # off
    assert host_port("[::1]:9464") == ("[::1]", 9464)
    for listen in [*BAD[1:], "unix:///run/m.sock"]:
        with pytest.raises(BadListen, match="--http-listen"):
            check_http_listen(listen)


def test_bind_error_names_a_busy_port_and_passes_a_free_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = bind_error(f"127.0.0.1:{port}")
        assert busy is not None and busy.errno == errno.EADDRINUSE
    assert bind_error(f"127.0.0.1:{port}") is None  # closed: free again, nothing held
    assert bind_error("127.0.0.1:0") is None and bind_error("unix:///run/m.sock") is None
