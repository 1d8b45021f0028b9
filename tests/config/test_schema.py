"""The registry itself: every section loadable, documented, ranged; the reference in sync."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import pytest
from memsidecar.v1 import settings_pb2

from sidecar.api.server_config import ServerConfig
from sidecar.auth.config import AuthConfig, TlsConfig
from sidecar.config import SECTIONS, Config, Section
from sidecar.config.docs import REGENERATE, reference
from sidecar.config.loader import _section
from sidecar.config.report import all_sections, rows
from sidecar.config.schema import INJECTION
from sidecar.config.typed import Issue, check_supported, hints
from sidecar.knobs import knob, restart_keys, secret_keys
from sidecar.metrics.config import HttpConfig
from sidecar.store.config import StoreConfig

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_registry_matches_the_config_dataclass() -> None:
    names = {f.name for f in fields(Config)} - {"defaults", "agents"}
    assert {s.name for s in SECTIONS} == names
    config_types = hints(Config)
    for section in SECTIONS:
        assert config_types[section.name] is section.cls, section.name
    assert config_types["defaults"] is INJECTION.cls


@pytest.mark.parametrize("section", [*SECTIONS, INJECTION], ids=lambda s: s.name)
def test_every_section_is_supported_and_every_key_documented(section: Section) -> None:
    check_supported(section.cls)
    for row in rows(section):
        assert row.rule.doc, f"[{row.table}] {row.key} has no doc (knob metadata)"
        if row.type in (int, float):
            assert row.rule.ge is not None, f"[{row.table}] {row.key}: numbers need a range"


def test_every_injection_key_is_in_the_settings_proto() -> None:
    proto = set(settings_pb2.MemoryInjectionConfig.DESCRIPTOR.fields_by_name)
    assert {f.name for f in fields(INJECTION.cls)} <= proto


def test_docs_configuration_md_is_the_generated_reference() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == reference(), (
        f"docs/configuration.md is stale; regenerate it: {REGENERATE}")
    keys = sum(1 for section, path in all_sections() for _ in rows(section, path))
    assert reference().count("\n| `") == keys
    assert "| `bm25_b` | float | `0.5` | 0..1 | restart |" in reference()
    assert "| `rrf_k` | float | `10.0` | 0.1..10000 | hot |" in reference()


def test_restart_keys_come_from_the_field_metadata() -> None:
    assert set(restart_keys(Config)) == {
        *(f"server.{f.name}" for f in fields(ServerConfig)
          if f.name not in ("auth", "tls", "http")),
        *(f"server.http.{f.name}" for f in fields(HttpConfig)),
        *(f"server.auth.{f.name}" for f in fields(AuthConfig)),
        *(f"server.tls.{f.name}" for f in fields(TlsConfig)),
        "injection.sweep_interval_s",
        "retrieval.bm25_k1", "retrieval.bm25_b", "retrieval.bm25_epsilon",
        "retrieval.bm25_stemming", "retrieval.residency", "retrieval.resident_agents",
        "retrieval.vector.exact_threshold", "retrieval.vector.hnsw_m",
        "retrieval.vector.hnsw_ef_construction", "retrieval.vector.persist", "embedding.model",
        *(f"store.{f.name}" for f in fields(StoreConfig))}
    assert set(secret_keys(Config)) == {"store.dsn"}


@dataclass(frozen=True, slots=True)
class Nested:
    depth: int = field(default=2, metadata=knob("depth", ge=0, le=5))


@dataclass(frozen=True, slots=True)
class Plugged:
    """A stand-in for a section owned by another module: nested table + a cross-field check."""

    k: int = field(default=60, metadata=knob("k", ge=1))
    vector: Nested = field(default_factory=Nested)


def not_13(obj: Plugged) -> list[tuple[str, str]]:
    return [("k", "must not be 13")] if obj.k == 13 else []


def test_a_plugged_in_dataclass_gets_rules_nested_tables_and_its_checks() -> None:
    section = Section("plugged", Plugged, "test", checks=(not_13,))
    issues: list[Issue] = []
    obj = _section(section, {"k": 7, "vector": {"depth": 4}}, "plugged", issues)
    assert issues == [] and obj == Plugged(k=7, vector=Nested(depth=4))

    _section(section, {"k": 0, "vector": {"depth": 9, "dept": 1}}, "plugged", issues)
    assert [i.path for i in issues] == ["plugged.k", "plugged.vector.depth", "plugged.vector.dept"]
    issues.clear()
    _section(section, {"k": 13}, "plugged", issues)
    assert [(i.path, i.message) for i in issues] == [
        ("plugged.k", "plugged.k = 13: must not be 13")]


def test_unsupported_field_types_are_refused_at_registration() -> None:
    @dataclass
    class Bad:
        x: dict[str, int] = field(default_factory=dict)

    with pytest.raises(TypeError, match="unsupported"):
        check_supported(Bad)
