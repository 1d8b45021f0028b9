"""TLS and mutual TLS with a throwaway CA; reflection on or off."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from memsidecar.v1 import store_pb2 as s
from memsidecar.v1 import store_pb2_grpc
from memsidecar_client import Client

from sidecar.api.server import Server, create_server
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.auth.config import TlsConfig
from sidecar.embedding import Embedder
from sidecar.metrics.config import HttpConfig

Key = ec.EllipticCurvePrivateKey
VALID = (-datetime.timedelta(minutes=5), datetime.timedelta(days=1))  # from now
EXPIRED = (-datetime.timedelta(days=30), -datetime.timedelta(days=1))
NOT_YET_VALID = (datetime.timedelta(days=1), datetime.timedelta(days=30))


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key: Key, issuer: str, issuer_key: Key, ca: bool,
          valid: tuple[datetime.timedelta, datetime.timedelta] = VALID) -> x509.Certificate:
    """``valid``: notBefore and notAfter, from now."""
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now + valid[0]).not_valid_after(now + valid[1])
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: Key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Pki:
    """A CA, a server certificate for localhost and a client certificate, as PEM files; and
    what a server must refuse: a key of no certificate (other.key), the server's key
    certified in the past (expired.pem) and from tomorrow (future.pem)."""

    def __init__(self, root: Path) -> None:
        ca_key, server_key, client_key, other_key = (ec.generate_private_key(ec.SECP256R1())
                                                     for _ in range(4))
        self.ca = _pem(_cert("test-ca", ca_key, "test-ca", ca_key, ca=True))
        self.client_cert = _pem(_cert("agent", client_key, "test-ca", ca_key, ca=False))
        self.client_key = _key_pem(client_key)
        self.server_cert = _cert("localhost", server_key, "test-ca", ca_key, False)
        files = {"ca.pem": self.ca, "server.key": _key_pem(server_key),
                 "server.pem": _pem(self.server_cert), "other.key": _key_pem(other_key),
                 "expired.pem": _pem(_cert("localhost", server_key, "test-ca", ca_key, False,
                                           EXPIRED)),
                 "future.pem": _pem(_cert("localhost", server_key, "test-ca", ca_key, False,
                                          NOT_YET_VALID))}
        for name, data in files.items():
            (root / name).write_bytes(data)
        self.root = root

    def tls(self, mutual: bool = False) -> TlsConfig:
        return TlsConfig(cert=str(self.root / "server.pem"), key=str(self.root / "server.key"),
                         client_ca=str(self.root / "ca.pem") if mutual else "")


StartServer = Callable[..., Server]


@pytest.fixture
def start(tmp_path: Path, embedder: Embedder) -> Iterator[StartServer]:
    servers: list[Server] = []

    def run(**server: object) -> Server:
        config = ServerConfig(listen="localhost:0", data_dir=str(tmp_path / f"d{len(servers)}"),
                              http=HttpConfig(listen=""), **server)  # type: ignore[arg-type]
        started = create_server(App.open(config, embedder=embedder))
        started.start()
        servers.append(started)
        return started

    yield run
    for started in servers:
        started.stop(grace=0)


def _list(channel: grpc.Channel) -> None:
    store_pb2_grpc.MemoryStoreStub(channel).ListMemories(s.ListMemoriesRequest())


def test_tls_serves_trusting_clients_only(tmp_path: Path, start: StartServer) -> None:
    pki = Pki(tmp_path)
    server = start(tls=pki.tls())
    target = f"localhost:{server.port}"
    with grpc.secure_channel(target, grpc.ssl_channel_credentials(pki.ca)) as channel:
        _list(channel)
    with grpc.insecure_channel(target) as plain, pytest.raises(grpc.RpcError):
        _list(plain)
    with Client(target, tls=grpc.ssl_channel_credentials(pki.ca)) as client:
        assert not client.list().memories


def test_mutual_tls_needs_a_client_certificate(tmp_path: Path, start: StartServer) -> None:
    pki = Pki(tmp_path)
    server = start(tls=pki.tls(mutual=True))
    target = f"localhost:{server.port}"
    anonymous = grpc.ssl_channel_credentials(pki.ca)
    with grpc.secure_channel(target, anonymous) as channel, pytest.raises(grpc.RpcError):
        _list(channel)
    signed = grpc.ssl_channel_credentials(pki.ca, pki.client_key, pki.client_cert)
    with grpc.secure_channel(target, signed) as channel:
        _list(channel)


def _reflects(server: Server) -> bool:
    with grpc.insecure_channel(f"localhost:{server.port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        try:
            replies = list(stub.ServerReflectionInfo(iter([request])))
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNIMPLEMENTED
            return False
        return bool(replies[0].list_services_response.service)


def test_reflection_is_on_for_loopback_and_can_be_switched_off(start: StartServer) -> None:
    assert _reflects(start())
    assert not _reflects(start(reflection="off"))
