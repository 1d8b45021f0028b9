"""Which sidecar a page belongs to, shown in every page's header: two sidecars on one machine
must not be mistaken for each other."""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.admin.html import e


@dataclass(frozen=True, slots=True)
class Instance:
    data_dir: str
    grpc_listen: str
    version: str
    model: str  # the configured embedding model
    auth: bool

    def html(self) -> str:
        parts = (("data", self.data_dir), ("gRPC", self.grpc_listen),
                 ("version", self.version), ("model", self.model),
                 ("auth", "on" if self.auth else "off"))
        return " · ".join(f'{name} <b data-field="{e(name.lower())}">{e(value)}</b>'
                          for name, value in parts)
