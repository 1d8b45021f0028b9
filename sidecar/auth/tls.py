"""``[server.tls]``'s PEM files, read and checked before the server binds (``serve`` and
``config check`` run the same reader): each file readable PEM, the key the certificate's own,
the certificate valid now (``sidecar.auth.certificate``). Relative paths are relative to the
working directory."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from sidecar.auth.certificate import Validity, check_pair, check_validity
from sidecar.auth.config import TlsConfig


@dataclass(frozen=True, slots=True)
class TlsFiles:
    key: bytes
    cert: bytes
    client_ca: bytes | None  # mutual TLS: clients must present a certificate it signed
    validity: Validity  # of the server's certificate


def read_tls(tls: TlsConfig, now: datetime.datetime | None = None) -> TlsFiles:
    """The PEM files of ``tls`` (enabled), the certificate checked at ``now`` (default: the
    current time); OSError naming the key, the file and the problem otherwise."""
    if not (tls.cert and tls.key):
        raise OSError("[server.tls] needs both cert and key")
    key = _read(tls.key, "key", b"PRIVATE KEY-----")
    cert = _read(tls.cert, "cert", b"-----BEGIN CERTIFICATE-----")
    client_ca = (_read(tls.client_ca, "client_ca", b"-----BEGIN CERTIFICATE-----")
                 if tls.client_ca else None)
    check_pair(tls.cert, tls.key)
    try:
        validity = check_validity(tls.cert, cert, now or datetime.datetime.now(datetime.UTC))
    except ValueError as err:
        raise OSError(f"[server.tls] cert: {tls.cert}: {err}") from None
    return TlsFiles(key, cert, client_ca, validity)


def _read(path: str, key: str, marker: bytes) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise OSError(f"[server.tls] {key}: cannot read {err.filename}: {err.strerror}") from err
    if marker not in data:
        what = "private key" if key == "key" else "certificate"
        raise OSError(f"[server.tls] {key}: {path} holds no PEM {what}")
    return data
