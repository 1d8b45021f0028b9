"""The deployment figures: wheel sizes, image size, time from ``podman run`` to SERVING.

Needs ``make dist`` and the image (``deploy/podman/podman.sh image``). Each start runs the
image on the host network and times ``podman run`` until the health service, watched from the
host, reports SERVING: first on a new volume (Numba compiles the kernels into the volume's
cache), then restarts on that volume (the compiled kernels are reused). The store is empty;
for start-up and RSS over 10k / 100k memories see ``bench/startup_rss.py``.

Run: ``.venv/bin/python -m bench.deploy_figures [--restarts 2]``; writes
bench/results/deploy_figures.md.
"""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path

from bench.results import write_results
from deploy.tests.conftest import DIST, free_port, wait_serving
from deploy.tests.podman import build_image, inspect, podman

DATA = "/var/lib/memsidecar"


def start_to_serving(image: str, volume: str) -> float:
    addr = f"127.0.0.1:{free_port()}"
    name = f"memsidecar-bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    podman("run", "--detach", "--name", name, "--network=host", "--volume", f"{volume}:{DATA}",
           image, "serve", "--data-dir", f"{DATA}/data", "--listen", addr)
    try:
        wait_serving(addr)
        return time.perf_counter() - start
    finally:
        podman("stop", "--time", "30", name)
        podman("rm", "--force", name, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=2)
    args = parser.parse_args()
    image = build_image()
    volume = f"memsidecar-bench-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", volume)
    try:
        first = start_to_serving(image, volume)
        again = [start_to_serving(image, volume) for _ in range(args.restarts)]
    finally:
        podman("volume", "rm", "--force", volume, check=False)
    rows = [f"| {w.name} | {w.stat().st_size / 1e6:.2f} MB |" for w in sorted(DIST.glob("*.whl"))]
    size = float(inspect("image", image)["Size"]) / 1e6
    report = "\n".join([
        "| Artefact | Size |", "|---|---|", *rows, f"| image {image} | {size:.0f} MB |", "",
        "| `podman run` to SERVING | seconds |", "|---|---|",
        f"| new volume (kernels compiled) | {first:.1f} |",
        *(f"| restart {i + 1} (kernels cached in the volume) | {s:.1f} |"
          for i, s in enumerate(again)),
    ])
    print(report)
    print(write_results(Path(__file__).stem, report))


if __name__ == "__main__":
    main()
