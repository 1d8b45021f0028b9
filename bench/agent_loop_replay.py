"""The README's agent loop replayed against a real sidecar, for the conversation benches.

``served(data_dir)`` runs ``memsidecar serve`` over a data dir and yields a client;
``AgentLoop`` drives one channel as the README's loop does (PruneHistory keeping 3 blocks ->
Inject -> block, question, then the given reply) and tells what the model has in view;
``config_text`` merges a ``--config`` file over a bench's defaults; ``append_block`` appends
stamped rows (date, commit, CPU flags, config) to a results table.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from memsidecar.v1 import injection_pb2
from memsidecar_client import Client, MemsidecarError, message

from bench.replay_longmemeval import free_port, sidecar_process
from bench.results import stamp
from bench.trees import source_tree
from sidecar.retrieval.vector.adaptive import open_vector_index
from sidecar.retrieval.vector.config import VectorConfig
from sidecar.store.db import Database
from sidecar.store.repos import Repositories

MAX_KEEP = 3  # blocks the history keeps, the incoming one included (the README's loop)


def save_index(data_dir: Path) -> None:
    """Build and save the store's hnsw index (when it has none), so every run's sidecar
    loads it rather than searching exactly while it builds one in the background."""
    if (data_dir / "vectors.hnsw").exists():
        return
    db = Database(data_dir / "memsidecar.sqlite3")
    index = open_vector_index(data_dir, Repositories.open(db).memories, VectorConfig(), 384,
                              wait=True)
    index.close()  # saves DATA_DIR/vectors.hnsw when the index is in use
    db.close()


def config_text(extra: Path | None, max_total: int,
                base: dict[str, Any] | None = None) -> str:
    """The sidecar's config file: ``base`` and ``max_total`` under
    ``[defaults.memory_injection]``, with the file ``extra`` merged over them (its keys win)."""
    data: dict[str, Any] = tomllib.loads(extra.read_text(encoding="utf-8")) if extra else {}
    for section, keys in (base or {}).items():
        for key, value in keys.items():
            data.setdefault(section, {}).setdefault(key, value)
    injection = data.setdefault("defaults", {}).setdefault("memory_injection", {})
    injection.setdefault("max_total", max_total)
    return tomlkit.dumps(data)


def block_words(block: str) -> int:
    """Words of the block's item lines, without the prefix, section headers, marker line and
    each line's ``[Type]`` tag."""
    count = 0
    for line in block.splitlines():
        if not line or (line.startswith("[") and line.endswith("]")):
            continue
        count += len(re.sub(r"^\[[^\]]*\]\s*", "", line).split())
    return count


@dataclass
class Seen:
    """One turn as the model sees it: its block's items, the items of the blocks the pruned
    history still holds, the block's words, the client-side Inject time and that of the
    PruneHistory before it."""

    own: set[str]
    held: set[str]
    words: int
    inject_ms: float
    prune_ms: float = 0.0
    ranked: tuple[str, ...] = ()  # the block's items in its order (the search's ranking)


class AgentLoop:
    """The README's agent loop on one channel, with the gold answer as the model's reply;
    ``prepend`` > 0: the client itself puts that many earlier question/answer pairs before
    the question in Inject's text (the naive client-side alternative, for comparison)."""

    def __init__(self, client: Client, channel: str, agent: str,
                 prepend: int = 0) -> None:
        self.client, self.channel, self.agent = client, channel, agent
        self.prepend = prepend
        self.history = [message("system", "You answer questions.")]
        self.blocks: list[tuple[int, set[str]]] = []  # (history index, item ids) per block
        self.exchanges: list[str] = []  # "question\nanswer" per earlier turn

    def turn(self, question: str, answer: str,
             inject: Callable[[str], tuple[str, Sequence[str]]] | None = None) -> Seen:
        """One turn; ``inject``: how its block is asked for (default: ``Inject`` over gRPC)."""
        start = time.perf_counter()
        pruned = self.client.prune_history(self.history, max_keep=MAX_KEEP,
                                           channel_id=self.channel, agent_id=self.agent)
        prune_ms = (time.perf_counter() - start) * 1000
        removed = set(pruned.removed_indices)
        self.blocks = [(i - sum(r < i for r in removed), ids) for i, ids in self.blocks
                       if i not in removed]
        self.history = list(pruned.messages)
        start = time.perf_counter()
        earlier = self.exchanges[-self.prepend:] if self.prepend else []
        block, ranked = (inject or self.inject)("\n".join([*earlier, question]))
        spent = (time.perf_counter() - start) * 1000
        own = set(ranked)
        held = set().union(*(ids for _, ids in self.blocks))
        if block:
            self.blocks.append((len(self.history), own))
            self.history.append(message("user", block))
        self.history.append(message("user", question))
        self.history.append(message("assistant", answer))
        self.exchanges.append(f"{question}\n{answer}")
        return Seen(own, held, block_words(block), spent, prune_ms, tuple(ranked))

    def inject(self, text: str) -> tuple[str, list[str]]:
        """The block of ``text`` and its memories in block order (``Inject`` over gRPC)."""
        reply = self.client.inject(text, channel_id=self.channel, agent_id=self.agent,
                                   source="user")
        return reply.block, [item.id for item in reply.items]


def retention(alone: Sequence[str], shown: set[str], top: int,
              duplicates: Set[str] = frozenset()) -> tuple[int, int, int, int, int]:
    """Own-hit retention of one turn: of the memories its text alone injects (``alone``, in
    the search's ranking), how many, and how many of them the turn has in its block or in view
    (``shown``); the same of the first ``top`` of them; and how many of those first ``top``
    missed were left out as ``duplicates`` of a memory in view (the semantic dedup: the text
    in view already)."""
    first = alone[:top]
    return (len(alone), len(shown.intersection(alone)), len(first),
            len(shown.intersection(first)), len((set(first) & duplicates) - shown))


def retention_line(rows: Sequence[tuple[int, int, int, int, int]], top: int) -> str:
    """The summed ``retention`` of a run's turns, as a line."""
    total, kept, first, first_kept, twins = (sum(x) for x in zip(*rows, strict=True))
    return (f"own-hit retention: {kept} of {total} memories the text alone injects are in the "
            f"turn's block or in view ({kept / max(total, 1):.4f}); turns with a miss: "
            f"{sum(r[1] < r[0] for r in rows)} of {len(rows)}; of the search's top {top}: "
            f"{first_kept} of {first} ({first_kept / max(first, 1):.4f}), turns with a miss: "
            f"{sum(r[3] < r[2] for r in rows)}, of the {first - first_kept} missed "
            f"{twins} semantic duplicates of a memory in view")


def own_hit_retention(client: Client, loop: AgentLoop, seen: Seen, alone: Sequence[str],
                      top: int) -> tuple[int, int, int, int, int]:
    """``retention`` of the turn ``seen`` of ``loop``, whose text alone injects ``alone``: a
    miss among the first ``top`` is looked up in the turn's trace, for the memories it left
    out as semantic duplicates of a memory in view."""
    shown = seen.own | seen.held
    twins: set[str] = set()
    if set(alone[:top]) - shown:
        turns = client.get_injection_trace(loop.channel, last_n=1, agent_id=loop.agent).turns
        twins = {d.id for t in turns for d in t.dropped
                 if d.reason == injection_pb2.DROP_REASON_SEMANTIC_DUPLICATE
                 and d.duplicate_of in seen.held}
    return retention(alone, shown, top, twins)


@contextlib.contextmanager
def served(data_dir: Path, timeout_s: float = 5.0) -> Iterator[Client]:
    """A client of a ``memsidecar serve`` process over ``data_dir``; when the sidecar fails
    (e.g. it rejects the config file), the end of its log goes to stderr."""
    target = f"127.0.0.1:{free_port()}"
    try:
        with sidecar_process(data_dir, target), Client(target, timeout_s=timeout_s) as client:
            yield client
    except (RuntimeError, MemsidecarError):
        log = data_dir / "sidecar.log"
        if log.exists():
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise


@contextlib.contextmanager
def python_path(tree: Path) -> Iterator[None]:
    """Sidecars started in the body import ``sidecar`` and ``kernels`` from ``tree``."""
    # PYTHONSAFEPATH: ``python -m`` would put the working directory (this tree) first.
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ.update(PYTHONPATH=str(source_tree(tree)), PYTHONSAFEPATH="1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                del os.environ[key]
            else:
                os.environ[key] = value


def cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    return " ".join(sorted(set(re.findall(r"\bavx[\w]*", text)))) or "none"


STAMP_HEADER = " date | commit | CPU flags | config |"


def flat(toml: str) -> str:
    """``section.key=value`` pairs of a config file, for a results row."""
    def walk(prefix: str, value: Any) -> list[str]:
        if isinstance(value, dict):
            return [p for k, v in value.items() for p in walk(f"{prefix}{k}.", v)]
        return [f"{prefix[:-1]}={value}"]
    return " ".join(walk("", tomllib.loads(toml)))


def append_block(path: Path, title: str, header: str, lines: list[str], toml: str) -> str:
    """Append the rows, each stamped with the date, commit, CPU flags and config, to a
    results file that starts with the table's header; returns the stamp cells."""
    meta = stamp()
    cells = f" {meta['date']} | {meta['commit']} | {cpu_flags()} | {flat(toml)} |"
    first, rule = header.split("\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(f"# {title}\n\n{first}{STAMP_HEADER}\n{rule}---|---|---|---|\n",
                        encoding="utf-8")
    with path.open("a", encoding="utf-8") as out:
        out.write("".join(f"{line}{cells}\n" for line in lines))
    return cells


def label_of(config: Path | None, label: str, prepend: int) -> str:
    """A results row's label: ``label``, else the config file's stem (or "default"), with the
    client-side prepending when on."""
    return label or (config.stem if config else "default") + (
        f", client prepends {prepend}" if prepend else "")


def report(out: Path, title: str, header: str, lines: list[str], toml: str, what: str,
           start: float) -> None:
    """Append the rows to ``out`` and print them with the run's figures."""
    append_block(out, title, header, lines, toml)
    print(header)
    print("\n".join(lines))
    print(f"{what}, replay {time.perf_counter() - start:.0f} s, CPU {cpu_flags()}, load "
          f"average {os.getloadavg()[0]:.1f}; config: {flat(toml)}")
    print(f"results: {out}")
