"""Format-preserving edits of shapes an operator may write by hand, and the atomic write."""

from __future__ import annotations

from pathlib import Path

from sidecar.config import load_text
from sidecar.config.writer import edit_injection
from sidecar.files import write_atomic


def test_inline_table_override_is_edited_in_place_and_reset() -> None:
    text = '[[agents]]\nid = "a"\nmemory_injection = { search_limit = 3 }  # inline\n'
    edited = edit_injection(text, "a", {"max_total": 9}, reset=False)
    assert "# inline" in edited
    assert dict(load_text(edited).agent("a").overrides or {}) == {"search_limit": 3,
                                                                  "max_total": 9}
    assert edit_injection(edited, "a", {}, reset=True).strip() == ""


def test_defaults_with_their_own_header_keep_comments() -> None:
    text = "[defaults]\n# why the defaults are what they are\n[defaults.memory_injection]\n" \
           "enabled = false\n"
    edited = edit_injection(text, "", {"search_limit": 4}, reset=False)
    assert "# why the defaults are what they are" in edited
    config = load_text(edited)
    assert config.defaults.search_limit == 4 and config.defaults.enabled is False


def test_other_agents_are_untouched() -> None:
    text = ('[[agents]]\nid = "a"\n[agents.memory_injection]\nsearch_limit = 1\n\n'
            '[[agents]]\nid = "b"  # keep\n[agents.memory_injection]\nsearch_limit = 2\n')
    edited = edit_injection(text, "a", {}, reset=True)
    assert edited == '[[agents]]\nid = "b"  # keep\n[agents.memory_injection]\nsearch_limit = 2\n'


def test_write_atomic_is_owner_only_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("old")
    path.chmod(0o644)
    write_atomic(path, "new")
    assert path.read_text() == "new"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["c.toml"]
