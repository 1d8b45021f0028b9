"""The [vault] section of memsidecar.toml reaches the gate, is hot, and is validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.api.server_config import ServerConfig
from sidecar.config import ConfigError, ConfigStore
from sidecar.embedding import Embedder
from tests.conftest import start_server
from tests.vault.conftest import rpc_error, trailers, upsert


def test_vault_section_is_applied_and_hot(config: ServerConfig, embedder: Embedder) -> None:
    data = Path(config.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    (data / "memsidecar.toml").write_text("[vault]\nmax_chars = 30\n", encoding="utf-8")
    live = start_server(config, embedder)
    try:
        err = rpc_error(lambda: upsert(live, "a fact that is thirty-one chars"))
        assert trailers(err)["memsidecar-reason"] == "TOO_LONG" and "30" in err.details()
        upsert(live, "The user likes tea")
        assert upsert(live, "The user likes tea").deduplicated
        (data / "memsidecar.toml").write_text(
            "[vault]\nmax_chars = 40\nduplicate_gate = false\n", encoding="utf-8")
        assert live.server.app.settings.reload()
        assert upsert(live, "a fact that is thirty-one chars").created
        assert upsert(live, "The user likes tea").created
    finally:
        live.close()


def test_vault_validate_runs_on_load(tmp_path: Path) -> None:
    path = tmp_path / "memsidecar.toml"
    path.write_text('[vault]\nnoise_phrases = ["ok", " "]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        ConfigStore.open(path)
    assert "vault.noise_phrases" in str(info.value)
