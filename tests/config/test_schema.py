"""The registry itself: every section loadable, documented, ranged."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import pytest
from memsidecar.v1 import settings_pb2

from sidecar.config import SECTIONS, Config, Section
from sidecar.config.loader import _section
from sidecar.config.report import rows
from sidecar.config.rules import knob
from sidecar.config.schema import INJECTION
from sidecar.config.typed import Issue, check_supported, hints
from sidecar.errors import InvalidArgument


def test_registry_matches_the_config_snapshot() -> None:
    names = {f.name for f in fields(Config)} - {"defaults", "agents"}
    assert {s.name for s in SECTIONS} == names
    config_types = hints(Config)
    for section in SECTIONS:
        assert config_types[section.name] is section.cls, section.name
    assert config_types["defaults"] is INJECTION.cls


@pytest.mark.parametrize("section", [*SECTIONS, INJECTION], ids=lambda s: s.name)
def test_every_section_is_supported_and_every_key_documented(section: Section) -> None:
    check_supported(section.cls)
    for path, key, _default, rule, tp in rows(section):
        assert rule.doc, f"[{path}] {key} has no doc (field metadata or Section rules)"
        if tp in (int, float):
            assert rule.ge is not None, f"[{path}] {key}: numbers need a range"
    assert set(section.rules) <= {f.name for f in fields(section.cls)}, "rule for no field"


def test_every_injection_key_is_in_the_settings_proto() -> None:
    proto = set(settings_pb2.MemoryInjectionConfig.DESCRIPTOR.fields_by_name)
    assert {f.name for f in fields(INJECTION.cls)} <= proto


@dataclass(frozen=True, slots=True)
class Nested:
    depth: int = field(default=2, metadata=knob("depth", ge=0, le=5))


@dataclass(frozen=True, slots=True)
class Plugged:
    """A stand-in for a section owned by another module: nested table + own validate()."""

    k: int = 60
    vector: Nested = field(default_factory=Nested)

    def validate(self) -> Plugged:
        if self.k == 13:
            raise InvalidArgument("plugged.k must not be 13", field="plugged.k")
        return self


def test_a_plugged_in_dataclass_gets_rules_nested_tables_and_its_validate() -> None:
    from sidecar.config.rules import Rule

    section = Section("plugged", Plugged, "test", rules={"k": Rule("k", ge=1)})
    issues: list[Issue] = []
    obj = _section(section, {"k": 7, "vector": {"depth": 4}}, "plugged", issues)
    assert issues == [] and obj == Plugged(k=7, vector=Nested(depth=4))

    _section(section, {"k": 0, "vector": {"depth": 9, "dept": 1}}, "plugged", issues)
    assert [i.path for i in issues] == ["plugged.k", "plugged.vector.depth", "plugged.vector.dept"]
    issues.clear()
    _section(section, {"k": 13}, "plugged", issues)
    assert [(i.path, i.message) for i in issues] == [
        ("plugged.k", "plugged.k must not be 13")]


def test_unsupported_field_types_are_refused_at_registration() -> None:
    @dataclass
    class Bad:
        x: dict[str, int] = field(default_factory=dict)

    with pytest.raises(TypeError, match="unsupported"):
        check_supported(Bad)
