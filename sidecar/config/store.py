"""The live configuration: one immutable ``Config`` swapped atomically, its file, its updates.

Readers take ``store.current`` (or ``injection_for``) and keep using that version; a reload or
an update builds a whole new version and swaps the reference in one assignment, so no reader
ever sees half of one and half of another. Reloads and updates are serialised by one lock.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from sidecar.api.server_config import ServerConfig
from sidecar.config.loader import ConfigError, load_text
from sidecar.config.reloader import POLL_INTERVAL_S, Reloader
from sidecar.config.schema import INJECTION, AgentConfig, Config
from sidecar.config.typed import Issue
from sidecar.config.writer import edit_injection
from sidecar.disk import DiskFaults, os_refusal
from sidecar.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from sidecar.files import write_atomic
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.knobs import keep_restart_keys, restart_keys, secret_keys
from sidecar.live import Live
from sidecar.redact import echo

log = logging.getLogger(__name__)

MISSING = "missing"
# A file modified this recently is re-hashed even when its mtime and size look unchanged
# (an edit within the file system's timestamp granularity keeps both).
RACY_NS = 2_000_000_000
INJECTION_KEYS = frozenset(f.name for f in fields(INJECTION.cls))


# [[agents]] sections UpdateConfig creates at most: the file is rewritten whole on each update,
# so a caller adding agent after agent must not grow it (and every update's cost) without end.
MAX_AGENT_SECTIONS = 1000

class ConfigStore:
    def __init__(self, path: Path, config: Config, text: str | None) -> None:
        self.path = path
        self._config = config
        self._loaded = config  # as the file last read says (before restart-only keys are kept)
        self._text = text  # last good file text; None = no file
        self._good = _digest(text)
        self._seen = self._good  # digest of the file content last examined
        self._bad: ConfigError | None = None  # why the content last examined was rejected
        self._pending: str | None = None  # digest waiting to be seen twice (settle)
        self._stat: tuple[int, int, int] | None = None
        self._lock = threading.Lock()
        self._reloader: Reloader | None = None
        self.reloads = (0, 0)  # (applied, rejected) file edits since start
        self.generation = 0  # bumped by every swap
        self.faults = DiskFaults()  # a write-back the disk refused (the App shares its own)

    @classmethod
    def open(cls, path: Path, *, required: bool = False) -> ConfigStore:
        """Load ``path``; a missing file means built-in defaults unless ``required``."""
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            if required:
                raise ConfigError(str(path), [Issue("", "", f"no such file: {path}")]) from None
            log.info("no config file, using built-in defaults", extra={"path": str(path)})
            return cls(path, Config(), None)
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(str(path), [Issue("", "", f"cannot read {path}: {err}")]) from err
        return cls(path, load_text(text, str(path)), text)

    @property
    def current(self) -> Config:
        return self._config

    def live(self) -> Live[Config]:
        """The running config as a ``Live`` (``.map(...)`` for one section)."""
        return Live(lambda: self._config)

    def injection_for(self, agent_id: str) -> MemoryInjectionConfig:
        return self._config.injection_for(agent_id)

    def agent(self, agent_id: str) -> AgentConfig:
        return self._config.agent(agent_id)

    def pin_server(self, server: ServerConfig) -> None:
        """The [server] actually running (file + command line); reloads keep it."""
        with self._lock:
            self._swap(replace(self._config, server=server))

    # -- hot reload -------------------------------------------------------------------------

    def watch(self, interval: float = POLL_INTERVAL_S) -> None:
        if self._reloader is None:
            self._reloader = Reloader(lambda: self.reload(settle=True), interval)
            self._reloader.start()

    def close(self) -> None:
        if self._reloader is not None:
            self._reloader.stop()
            self._reloader = None

    def reload(self, settle: bool = False) -> bool:
        """Apply the file if it changed and is valid; a bad edit is logged and ignored.

        ``settle`` (the watcher): new content is applied only once two polls in a row read
        the same bytes, so a file caught half-written (truncated by an in-place save) is
        never applied.
        """
        with self._lock:
            return self._reload_locked(settle)

    def _reload_locked(self, settle: bool = False) -> bool:
        polled = self._poll_locked(force=self._pending is not None)
        if polled is None:
            return False
        text, digest = polled
        if digest == self._seen:
            self._pending = None
            return False
        if settle and digest != self._pending:
            self._pending = digest
            return False
        self._pending = None
        self._seen, self._bad = digest, None
        if text is None:
            log.warning("config file removed; keeping the last config",
                        extra={"path": str(self.path)})
            return False
        if digest == self._good:
            return False
        try:
            config = load_text(text, str(self.path))
        except ConfigError as err:
            self._bad = err
            self.reloads = (self.reloads[0], self.reloads[1] + 1)
            log.error("config reload rejected, keeping the last good config: %s", err.message)
            return False
        self._apply(config, text)
        self.reloads = (self.reloads[0] + 1, self.reloads[1])
        log.info("config reloaded", extra={"path": str(self.path), "agents": len(config.agents)})
        return True

    def _poll_locked(self, force: bool = False) -> tuple[str | None, str] | None:
        """(text, digest) when the file may have changed since the last look, else None."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            stat = None
        else:
            stat = (st.st_mtime_ns, st.st_size, st.st_ino)
        unchanged = stat == self._stat and not force
        if unchanged and (stat is None or time.time_ns() - stat[0] > RACY_NS):
            return None
        self._stat = stat
        if stat is None:
            return None, MISSING
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, MISSING
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            text = f"# not UTF-8: {err}\n["  # fails to parse: rejected like any bad edit
        return text, hashlib.sha256(data).hexdigest()

    # -- updates (Settings.UpdateConfig) ----------------------------------------------------

    def update_injection(self, agent_id: str, changes: Mapping[str, Any], reset: bool) -> Config:
        """Change an agent's (``""``: the defaults') memory injection; validate, write, apply.

        ``changes`` holds TOML-native values (labels for types). Invalid -> InvalidArgument
        naming ``memory_injection.<key>``, and nothing changes.
        """
        if agent_id and not agent_id.strip():
            raise InvalidArgument("agent_id must not be blank", field="agent_id")
        for key in changes:
            if key not in INJECTION_KEYS:
                raise InvalidArgument(f"memory_injection.{key}: unknown key",
                                      field=f"memory_injection.{key}")
        with self._lock:
            self._reload_locked()
            if self._bad is not None:
                raise FailedPrecondition(
                    f"the config file has errors an update would overwrite; fix it first. "
                    f"{self._bad.message}", reason="CONFIG_FILE_INVALID", field="config_file")
            if not changes and not reset:
                return self._config
            agents = self._config.agents
            if agent_id and agent_id not in agents and len(agents) >= MAX_AGENT_SECTIONS:
                raise ResourceExhausted(
                    f"the config file already has {MAX_AGENT_SECTIONS} [[agents]] sections, "
                    "the most UpdateConfig adds; give the agents the defaults, or reset "
                    "agents that need none (UpdateConfig with reset)",
                    reason="TOO_MANY_AGENTS", field="agent_id")
            text = edit_injection(self._text or "", agent_id, changes, reset)
            try:
                config = load_text(text, "after this update")
            except ConfigError as err:
                raise _update_error(err, changes) from None
            self._write(text)
            self._stat = None
            self._seen = _digest(text)
            self._apply(config, text)
            applied = self._config
        log.info("config updated", extra={"agent_id": agent_id, "keys": sorted(changes),
                                          "reset": reset})
        return applied

    def _write(self, text: str) -> None:
        """The file replaced by ``text``; a full or unwritable disk -> DiskFull / NotWritable
        naming the file (nothing changes: the old file and the running config stay)."""
        try:
            write_atomic(self.path, text)
        except OSError as err:
            fault = os_refusal(err, self.path)
            if fault is None:
                raise
            raise self.faults.refused(fault) from None
        self.faults.accepted()

    # -- swapping ---------------------------------------------------------------------------

    def _apply(self, config: Config, text: str) -> None:
        """Swap in ``config``, keeping the running value of every restart-only key."""
        secrets = set(secret_keys(Config))
        for key in restart_keys(Config):
            was, now = _get(self._loaded, key), _get(config, key)
            if was != now:
                shown = ("***", "***") if key in secrets else (was, now)
                log.warning("%s changed in the file (%r -> %r); restart to apply it",
                            key, *shown)
        self._loaded = config
        self._text, self._good, self._bad = text, _digest(text), None
        self._swap(keep_restart_keys(self._config, config))

    def _swap(self, config: Config) -> None:
        self._config = config  # one reference assignment: readers see old or new, never a mix
        self.generation += 1


def _digest(text: str | None) -> str:
    return MISSING if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _update_error(err: ConfigError, changes: Mapping[str, Any]) -> InvalidArgument:
    """The first issue of the changed keys; a changed value shown cut (``echo``), never the
    path (it holds the agent id)."""
    issue = next((i for i in err.issues if i.key in changes), err.issues[0])
    if issue.key not in INJECTION_KEYS or not issue.problem:
        return InvalidArgument(issue.message, field=issue.path, reason="BAD_CONFIG")
    field = f"memory_injection.{issue.key}"
    value = changes.get(issue.key)
    shown = f" = {echo(value)}" if isinstance(value, str) else (
        "" if value is None or isinstance(value, list) else f" = {value}")
    return InvalidArgument(f"{field}{shown}: {issue.problem}", field=field, reason="BAD_CONFIG")
