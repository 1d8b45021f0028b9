"""``[server.tls]``'s PEM files, read and checked before the server binds (``serve`` and
``config check`` run the same reader). Relative paths are relative to the working directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sidecar.auth.config import TlsConfig


@dataclass(frozen=True, slots=True)
class TlsFiles:
    key: bytes
    cert: bytes
    client_ca: bytes | None  # mutual TLS: clients must present a certificate it signed


def read_tls(tls: TlsConfig) -> TlsFiles:
    """The PEM files of ``tls`` (enabled); OSError naming the key and the file otherwise."""
    if not (tls.cert and tls.key):
        raise OSError("[server.tls] needs both cert and key")
    files = TlsFiles(_read(tls.key, "key", b"PRIVATE KEY-----"),
                     _read(tls.cert, "cert", b"-----BEGIN CERTIFICATE-----"),
                     _read(tls.client_ca, "client_ca", b"-----BEGIN CERTIFICATE-----")
                     if tls.client_ca else None)
    return files


def _read(path: str, key: str, marker: bytes) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise OSError(f"[server.tls] {key}: cannot read {err.filename}: {err.strerror}") from err
    if marker not in data:
        what = "private key" if key == "key" else "certificate"
        raise OSError(f"[server.tls] {key}: {path} holds no PEM {what}")
    return data
