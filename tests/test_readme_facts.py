"""What the README states about the repository, checked against it: the Python client's
dependencies are its pyproject's, and every file a serving sidecar keeps in its data dir is
named in "Where data lives"."""

from __future__ import annotations

import re
import tomllib
import urllib.request
from pathlib import Path

from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import store_pb2 as s

from sidecar.api.server_config import ServerConfig
from sidecar.cli import main
from sidecar.config import CONFIG_FILENAME
from sidecar.embedding import Embedder
from sidecar.retrieval.vector.persist import INDEX_FILE, meta_path
from tests.admin.conftest import start_site
from tests.clients.agent_loops import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
SQLITE_SIDE_FILES = ("-wal", "-shm")  # SQLite's, beside the database in WAL mode


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    return README[start:README.index("\n## ", start + 1)]


def test_the_python_client_needs_what_the_readme_says() -> None:
    project = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]
    needed = {re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0]
              for spec in project["dependencies"]}
    said = re.search(r"\(it needs ([^)]*)\)", " ".join(section("Examples").split()))
    assert said is not None
    assert set(re.split(r", | and ", said.group(1))) == needed


def test_every_file_of_a_served_data_dir_is_named(config: ServerConfig, embedder: Embedder,
                                                 tmp_path: Path) -> None:
    """A sidecar with a config file, a token, the admin page and a write; the saved vector
    index appears only past exact search (its names from its module)."""
    data = Path(config.data_dir)
    data.mkdir(parents=True)
    (data / CONFIG_FILENAME).write_text("")
    assert main(["token", "add", "--agent", "ada", "--data-dir", str(data)]) == 0
    site = start_site(config, embedder)
    try:
        site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
            content="Billing runs PostgreSQL 16", type=m.MEMORY_TYPE_FACT)))
        with urllib.request.urlopen(site.url("/settings")) as page:
            assert page.status == 200
        files = {p.name for p in data.iterdir()}
    finally:
        site.live.close()
    files |= {p.name for p in data.iterdir()}
    index = data / INDEX_FILE
    files |= {index.name, meta_path(index).name}
    told = section("Where data lives")
    missing = [name for name in sorted(files) if f"`{name}`" not in told and not any(
        name.endswith(side) and f"`{side}`" in told for side in SQLITE_SIDE_FILES)]
    assert not missing, f"files the README does not name: {missing}"
    assert {"admin-csrf.key", "memsidecar.sqlite3-wal", "lexical.npz", "tokens.json"} <= files
