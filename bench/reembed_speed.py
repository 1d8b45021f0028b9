"""Re-embed throughput after an ``[embedding] model`` switch, and the time it implies at 100k.

Copies the search benchmark's cached store (``bench/.cache/speed_<N>``, vectors of the fp32
model, built by ``bench/search_speed.py``), opens it with ``--model`` configured, so the App
plans a re-embed, and runs that re-embed in this thread to its switch, as the server's
background thread would (with no calls competing for the cores), then waits for the hnsw
index rebuilt after the switch. Prints rows, seconds, rows/s, the rebuild time and the time
that rate gives for 100,000 memories.

Run:  .venv/bin/python bench/reembed_speed.py [--size 10000] [--model minilm-int8]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from lme_data import CACHE  # noqa: E402

from sidecar.api.server_config import ServerConfig  # noqa: E402
from sidecar.app import App  # noqa: E402
from sidecar.config import CONFIG_FILENAME, Config, ConfigStore  # noqa: E402
from sidecar.embedding.config import EmbeddingConfig  # noqa: E402
from sidecar.embedding.models import INT8, MODEL_NAMES  # noqa: E402
from sidecar.metrics.config import HttpConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--model", choices=MODEL_NAMES, default=INT8)
    args = parser.parse_args()
    source = CACHE / f"speed_{args.size}"
    if not source.exists():
        raise SystemExit(f"{source} missing: run bench/search_speed.py --sizes {args.size}")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        for item in source.iterdir():
            if item.suffix != ".lock":
                shutil.copy2(item, Path(tmp) / item.name)
        config = ServerConfig(data_dir=tmp, http=HttpConfig(listen=""))
        settings = ConfigStore(Path(tmp) / CONFIG_FILENAME,
                               Config(embedding=EmbeddingConfig(args.model)), None)
        app = App.open(config, settings=settings)
        try:
            if app.reembed is None:
                raise SystemExit(f"{source} already holds {args.model} vectors")
            rows = app.reembed.progress()[1]
            start = time.perf_counter()
            app.reembed.run()
            seconds = time.perf_counter() - start
            assert app.vectors is not None
            app.vectors.wait_ready()
            rebuild = time.perf_counter() - start - seconds
        finally:
            app.close()
    rate = rows / seconds
    print(f"re-embed to {args.model}: {rows:,} rows in {seconds:.1f} s = {rate:.0f} rows/s "
          f"(batch {config.embed_batch_size}), then the hnsw rebuild in the background "
          f"{rebuild:.1f} s (exact search meanwhile); at this rate 100,000 rows take "
          f"{100_000 / rate / 60:.1f} min; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores")


if __name__ == "__main__":
    from results import recorded  # bench/ is on sys.path

    with recorded("reembed_speed"):
        main()
