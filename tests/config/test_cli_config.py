"""`memsidecar config check` and `serve --config` as real processes: exit codes, precedence."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from memsidecar.v1 import settings_pb2, settings_pb2_grpc

from sidecar.config.docs import reference
from sidecar.config.report import LEGEND
from tests.test_cli import ROOT, free_port, wait_serving

GOOD = """[retrieval]
rrf_k = 25
max_graph_depth = 1
[retrieval.relation_multipliers]
updates = 2.0
[retrieval.vector]
hnsw_ef_search = 128

[defaults.memory_injection]
search_limit = 12

[[agents]]
id = "assistant"
[agents.memory_injection]
pinned_types = ["todo", "goal"]
ambient_enabled = true
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sidecar", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_check_valid_file_prints_effective_config_per_agent(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(GOOD)
    done = run("config", "check", str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "OK (1 [[agents]] section)" in out
    assert "[defaults.memory_injection]\nenabled = true\nsearch_limit = 12\n" in out
    assert out.count(LEGEND) == 1
    agent = out[out.index('[[agents]]\nid = "assistant"\n[agents.memory_injection]\n'):]
    assert 'pinned_types = ["todo", "goal"]  # override\n' in agent
    assert "ambient_enabled = true  # override\n" in agent
    assert "search_limit = 12\n" in agent  # inherited from the defaults: unmarked
    assert agent.count("# override") == 2
    assert "[retrieval]\nsearch_limit = 20\nrrf_k = 25.0\n" in out and "[vault]" in out
    assert "max_graph_depth = 1\n" in out and "bm25_b = 0.5\n" in out
    assert "[retrieval.relation_multipliers]\nupdates = 2.0\ncaused_by = 1.3\n" in out
    assert "[retrieval.vector]\nexact_threshold = 5000\n" in out
    assert "hnsw_ef_search = 128\n" in out


def test_config_docs_prints_the_reference() -> None:
    done = run("config", "docs")
    assert done.returncode == 0, done.stderr
    assert done.stdout == reference()
    assert done.stdout.startswith("# Configuration reference\n")


def test_check_names_an_invalid_retrieval_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[retrieval.vector]\nhnsw_ef_serch = 64\n"
                    "[retrieval.relation_multipliers]\nupdates = -1\n")
    done = run("config", "check", str(path))
    assert done.returncode == 2
    assert 'retrieval.vector.hnsw_ef_serch: unknown key; did you mean "hnsw_ef_search"?' \
        in done.stderr
    assert "retrieval.relation_multipliers.updates = -1: out of range, allowed 0..100" \
        in done.stderr


def test_check_invalid_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace('"goal"', '"goals"'))
    done = run("config", "check", str(path))
    assert done.returncode == 2
    assert "agents[id=assistant].memory_injection.pinned_types" in done.stderr
    assert 'did you mean "goal"' in done.stderr
    assert done.stdout == ""
    assert run("config", "check", str(tmp_path / "absent.toml")).returncode == 2


def test_serve_with_a_bad_config_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[defaults.memory_injection]\npinned_sort = \"newest\"\n")
    done = run("serve", "--config", str(path), "--data-dir", str(tmp_path / "d"))
    assert done.returncode == 2
    assert "defaults.memory_injection.pinned_sort" in done.stderr
    assert '"recent" | "importance"' in done.stderr
    missing = run("serve", "--config", str(tmp_path / "absent.toml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_serve_reads_data_dir_config_by_default(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "memsidecar.toml").write_text("[retrieval]\nrrf_kk = 1\n")
    done = run("serve", "--data-dir", str(data), "--listen", f"127.0.0.1:{free_port()}")
    assert done.returncode == 2
    assert 'retrieval.rrf_kk: unknown key; did you mean "rrf_k"?' in done.stderr


def test_serve_config_file_with_command_line_overrides(tmp_path: Path) -> None:
    file_port, port = free_port(), free_port()
    path = tmp_path / "side.toml"
    path.write_text(f'[server]\nlisten = "127.0.0.1:{file_port}"\n'
                    f'data_dir = "{tmp_path / "from-file"}"\n\n{GOOD}')
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar", "serve", "--config", str(path),
         "--listen", f"127.0.0.1:{port}", "--http-listen", ""],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        channel = wait_serving(f"127.0.0.1:{port}", proc)  # --listen beats the file
        stub = settings_pb2_grpc.SettingsStub(channel)
        reply = stub.GetConfig(settings_pb2.GetConfigRequest(agent_id="assistant"))
        assert reply.memory_injection_overridden
        assert reply.memory_injection.search_limit == 12
        stub.UpdateConfig(settings_pb2.UpdateConfigRequest(
            agent_id="assistant", reset_memory_injection_override=True))
        assert "assistant" not in path.read_text()  # written back to --config FILE
        assert "[server]" in path.read_text()
        channel.close()
        assert (tmp_path / "from-file" / "memsidecar.sqlite3").exists()  # data_dir from file
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait() == 0
