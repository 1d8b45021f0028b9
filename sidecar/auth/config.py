"""``[server.auth]`` and ``[server.tls]``: authentication and transport security."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob


@dataclass(frozen=True, slots=True)
class AuthConfig:
    enabled: bool = field(default=False, metadata=knob(
        "Require a bearer token (memsidecar token add) on every call but health checks; the "
        "agent then comes from the token, never from the request.", restart=True))
    shared_write: str = field(default="operator", metadata=knob(
        "Who may write shared memories (empty agent_id) when auth is on.",
        choices=("operator", "any"), restart=True))
    allow_insecure_remote: bool = field(default=False, metadata=knob(
        "Start on a non-loopback address without auth (a WARNING at every start); otherwise "
        "such a listen address is refused.", restart=True))


@dataclass(frozen=True, slots=True)
class TlsConfig:
    cert: str = field(default="", metadata=knob(
        "PEM certificate chain of the server; with key, the server speaks TLS only.",
        restart=True))
    key: str = field(default="", metadata=knob("PEM private key of cert.", restart=True))
    client_ca: str = field(default="", metadata=knob(
        "PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS).",
        restart=True))

    @property
    def enabled(self) -> bool:
        return bool(self.cert or self.key)
