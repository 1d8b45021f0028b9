"""Every metric the sidecar defines, in a registry owned by the App (never the global one).

Events (RPCs, Inject stages, skips, write rejections) are counted as they happen; state
(memories, vector index, queues, reloads, refusals, channels) is read from ``Sources`` at
scrape time, so nothing on the request path updates a gauge.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from sidecar.records import Memory

PREFIX = "memsidecar"
OTHER_AGENTS = "(other)"  # the agent label of the memories of every agent not shown on its own
DEFAULT_AGENT_SERIES = 20
STAGES = ("embed", "pinned", "search", "dedup", "budget", "format", "persist")
_LATENCY = (.0005, .001, .0025, .005, .01, .015, .02, .025, .05, .075, .1, .15, .2, .25, .3,
            .4, .5, .75, 1, 2.5, 5, 10)
_STAGE = (.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1)
_ITEMS = (0, 1, 2, 3, 5, 8, 13, 21, 34)
_TOKENS = (0, 50, 100, 200, 400, 800, 1600, 3200)


@dataclass
class Sources:
    """Readers of the running state, called at scrape time."""

    memories: Callable[[], Iterable[Memory]] = lambda: ()
    vector_index: Callable[[], Mapping[str, int | str | bool]] = dict
    bm25: Callable[[], tuple[int, int]] = lambda: (0, 0)  # (segments, documents)
    queue_depth: Callable[[], int] = lambda: 0
    reloads: Callable[[], tuple[int, int]] = lambda: (0, 0)  # (applied, rejected)
    refusals: Callable[[], int] = lambda: 0  # RESOURCE_EXHAUSTED by admission
    open_channels: Callable[[], int] = lambda: 0
    reembed: Callable[[], tuple[int, int]] = lambda: (0, 0)  # (staged, total); 0, 0 = none
    captures: Callable[[], Mapping[str, int]] = dict  # outcome -> captures since start
    # Scopes held in the indexes: scopes, bytes, budget_bytes, loads, evictions, load_seconds.
    resident: Callable[[], Mapping[str, float]] = dict


@dataclass
class Metrics:
    sources: Sources = field(default_factory=Sources)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    agent_series: int = DEFAULT_AGENT_SERIES  # agents with series of their own (the busiest)

    def __post_init__(self) -> None:
        r = self.registry
        self.rpc_seconds = Histogram(
            f"{PREFIX}_rpc_duration_seconds", "gRPC calls by method and status code; "
            "_count is the number of calls.", ("method", "code"), registry=r, buckets=_LATENCY)
        self.stage_seconds = Histogram(
            f"{PREFIX}_inject_stage_seconds", "Time of each Inject stage.", ("stage",),
            registry=r, buckets=_STAGE)
        self.block_items = Histogram(
            f"{PREFIX}_inject_block_items", "Memories per injected block.", registry=r,
            buckets=_ITEMS)
        self.block_tokens = Histogram(
            f"{PREFIX}_inject_block_tokens", "Tokens per injected block.", registry=r,
            buckets=_TOKENS)
        self.skips = Counter(
            f"{PREFIX}_inject_skips", "Inject calls that injected nothing, by skip reason.",
            ("reason",), registry=r)
        self.rejections = Counter(
            f"{PREFIX}_write_rejections", "Writes refused by the vault's write gates, "
            "by reason.", ("reason",), registry=r)
        self.disk_refusals = Counter(
            f"{PREFIX}_disk_refusals", "Writes the disk refused, by reason: DISK_FULL (no "
            "space left), NOT_WRITABLE (read-only or no permission).", ("reason",), registry=r)
        self.admin_requests = Counter(
            f"{PREFIX}_admin_requests", "Admin page requests by page and HTTP status (not "
            "client RPCs: they are never counted in rpc_duration_seconds).",
            ("page", "status"), registry=r)
        r.register(_State(self.sources, self.agent_series))
        for standard in (ProcessCollector, PlatformCollector, GCCollector):
            standard(registry=r)

    def count_admin(self, page: str, status: int) -> None:
        self.admin_requests.labels(page, str(status)).inc()

    def names(self) -> list[str]:
        """The names of the metrics the sidecar defines (not the standard collectors')."""
        return sorted({m.name + ("_total" if m.type == "counter" else "")
                       for m in self.registry.collect() if m.name.startswith(PREFIX)})


class _State(Collector):
    """Gauges and counters read from the running state at scrape time."""

    def __init__(self, sources: Sources, agent_series: int) -> None:
        self.sources = sources
        self.agent_series = agent_series

    def collect(self) -> Iterator[Metric]:
        s = self.sources
        yield _memories(s.memories(), self.agent_series)
        yield from _vector_index(s.vector_index())
        segments, documents = s.bm25()
        yield _gauge("bm25_segments", "Segments of the BM25 index: each write adds a small one, "
                     "background merges fold them (1 when fully merged).", segments)
        yield _gauge("bm25_documents", "Documents in the BM25 index.", documents)
        yield _gauge("write_behind_queue_depth", "Writes queued behind replies.", s.queue_depth())
        ok, failed = s.reloads()
        reloads = CounterMetricFamily(f"{PREFIX}_config_reloads", "Config file reloads by "
                                      "result.", labels=("result",))
        reloads.add_metric(("ok",), ok)
        reloads.add_metric(("failed",), failed)
        yield reloads
        yield CounterMetricFamily(
            f"{PREFIX}_rpc_refusals", "Calls answered RESOURCE_EXHAUSTED "
            "(server.max_concurrent_rpcs).", value=s.refusals())
        yield _gauge("open_channels", "Conversation channels with an owner.", s.open_channels())
        staged, total = s.reembed()
        yield _gauge("reembed_staged_rows", "Rows re-embedded by the configured model so far "
                     "(0 when no re-embed runs).", staged)
        yield _gauge("reembed_total_rows", "Rows the running re-embed covers (0 when none "
                     "runs).", total)
        captures = CounterMetricFamily(
            f"{PREFIX}_captures", "Turns captured since start by outcome: stored, "
            "deduplicated, or the refusing gate's reason code.", labels=("outcome",))
        for outcome, count in sorted(s.captures().items()):
            captures.add_metric((outcome,), count)
        yield captures
        yield from _resident(s.resident())


def _resident(held: Mapping[str, float]) -> Iterator[Metric]:
    """The scopes held in the indexes (no labels: one series each, whatever the scopes)."""
    if not held:
        return
    yield _gauge("resident_scopes", "Scopes (shared, an agent's own, an agent's user's) held "
                 "in the indexes.", held["scopes"])
    yield _gauge("resident_bytes", "Estimated bytes the held scopes take in the indexes.",
                 held["bytes"])
    yield _gauge("resident_budget_bytes", "[retrieval] resident_mb in bytes: beyond it the "
                 "least recently used scopes are evicted.", held["budget_bytes"])
    yield CounterMetricFamily(f"{PREFIX}_scope_loads", "Scopes loaded from the store on "
                              "first use since start.", value=held["loads"])
    yield CounterMetricFamily(f"{PREFIX}_scope_evictions", "Scopes evicted from the indexes "
                              "since start.", value=held["evictions"])
    yield CounterMetricFamily(f"{PREFIX}_scope_load_seconds", "Time spent loading scopes "
                              "since start.", value=held["load_seconds"])


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def _memories(memories: Iterable[Memory], agents: int) -> GaugeMetricFamily:
    """Series of the shared scope and of the ``agents`` agents with the most live memories;
    every other agent's memories summed under agent="(other)", so the number of series is
    bounded whatever the number of agents."""
    gauge = GaugeMetricFamily(f"{PREFIX}_memories", "Live memories by agent ('' = shared; "
                              f"{OTHER_AGENTS} = every agent beyond the busiest "
                              "server.http.metrics_agents), type and tier.",
                              labels=("agent", "type", "tier"))
    tally = Tally((m.agent_id, m.type.name.lower(), m.tier.name.lower()) for m in memories)
    per_agent: Tally[str] = Tally()
    for (agent, _, _), count in tally.items():
        per_agent[agent] += count
    busiest = sorted((a for a in per_agent if a and a != OTHER_AGENTS),
                     key=lambda a: (-per_agent[a], a))[:agents]
    shown = {"", *busiest}
    series: Tally[tuple[str, str, str]] = Tally()
    for (agent, kind, tier), count in tally.items():
        series[(agent if agent in shown else OTHER_AGENTS, kind, tier)] += count
    for labels, count in sorted(series.items()):
        gauge.add_metric(labels, count)
    return gauge


def _vector_index(stats: Mapping[str, int | str | bool]) -> Iterator[GaugeMetricFamily]:
    engine = GaugeMetricFamily(f"{PREFIX}_vector_index_engine", "1 for the engine answering "
                               "vector searches.", labels=("engine",))
    for name in ("exact", "hnsw"):
        engine.add_metric((name,), int(stats.get("engine") == name))
    yield engine
    yield _gauge("vector_index_vectors", "Live vectors in the index.", int(stats.get("live", 0)))
    yield _gauge("vector_index_building", "1 while the hnsw index is being (re)built.",
                 int(bool(stats.get("building", False))))
