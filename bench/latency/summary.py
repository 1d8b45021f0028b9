"""Print the latency suite's JSON as a Markdown table (p50 / p99 / mean per RPC, in ms;
for Inject also the server-reported elapsed p50 and the client-side overhead).

Run: .venv/bin/python -m bench.latency.summary [bench/results/latency.json]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

RPC = {"test_inject": "Inject", "test_search": "Search (limit 10)",
       "test_prune_history": "PruneHistory (46 messages, 5 blocks)",
       "test_render_transcript": "RenderTranscript (46 messages)",
       "test_go_client_sequential_inject": "Inject, Go client (sequential)",
       "test_rust_client_sequential_inject": "Inject, Rust client (sequential)"}
ALL = ("test_inject", "test_go_client_sequential_inject", "test_rust_client_sequential_inject",
       "test_search", "test_prune_history", "test_render_transcript")


def nearest_rank(sorted_values: list[float], q: float) -> float:
    return sorted_values[max(0, math.ceil(q / 100 * len(sorted_values)) - 1)]


def row(bench: dict[str, Any]) -> str:
    info, stats = bench["extra_info"], bench["stats"]
    if "p50_us" in info:  # the Go client reports its own percentiles
        calls, p50, p99, mean = info["n"], info["p50_us"] / 1e3, info["p99_us"] / 1e3, \
            info["mean_us"] / 1e3
    else:
        data = sorted(stats["data"])
        calls, p50, p99, mean = (stats["rounds"], nearest_rank(data, 50) * 1e3,
                                 nearest_rank(data, 99) * 1e3, stats["mean"] * 1e3)
    server = overhead = ""
    if "server_p50_us" in info:  # Inject: the sidecar's own elapsed_us, and the rest
        server = f"{info['server_p50_us'] / 1e3:.2f}"
        overhead = f"{p50 - info['server_p50_us'] / 1e3:.2f}"
    return (f"| {RPC.get(bench['name'], bench['name'])} | {calls} | {p50:.2f} | {p99:.2f} | "
            f"{mean:.2f} | {server} | {overhead} | {info.get('loadavg_1m', '?')} |")


def table(report: dict[str, Any]) -> str:
    lines = ["| RPC | calls | p50 ms | p99 ms | mean ms | server p50 ms | client overhead "
             "(p50 - server p50) ms | load (1 min) |", "|---|---|---|---|---|---|---|---|"]
    done = {b["name"]: b for b in report["benchmarks"]}
    for name in ALL:
        lines.append(row(done[name]) if name in done else
                     f"| {RPC[name]} | pending (UNIMPLEMENTED on this server) | | | | | | |")
    return "\n".join(lines)


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/latency.json")
    # pytest-benchmark writes no file when every benchmark was skipped (all pending).
    report = json.loads(path.read_text()) if path.exists() else {"benchmarks": []}
    print(table(report))


if __name__ == "__main__":
    main()
