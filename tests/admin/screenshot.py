"""The README's screenshot (docs/img/admin.png): a real sidecar holding the support channel
of ``tests/admin/channel.py`` (312 memories, ten turns), its injection timeline in Debian's
chromium (``make chromium``), scripts off.

    .venv/bin/python -m tests.admin.screenshot --data-dir /var/lib/memsidecar docs/img/admin.png

The page's header shows the data dir and the gRPC address, so give them the values a
deployment has (deploy/memsidecar.service: /var/lib/memsidecar, 127.0.0.1:50051). The data
dir must not exist: it is created for the run and removed afterwards. The browser test of the
timeline takes the same picture (build/admin.png) on a temp data dir.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from sidecar.api.server_config import ServerConfig
from sidecar.embedding import Embedder
from sidecar.embedding.config import EmbeddingConfig
from sidecar.embedding.models import model_files

VIEWPORT = {"width": 1280, "height": 900}


def timeline(tab: Page, base: str, out: Path) -> None:
    """The support channel's timeline, as much as the viewport shows, written to ``out``."""
    from tests.admin.channel import CHANNEL

    tab.goto(f"{base}/injections?channel={CHANNEL}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(out), full_page=False)


def main() -> None:
    from tests.admin.channel import converse, fill
    from tests.admin.conftest import ARGS, CHROMIUM, start_site

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the PNG to write")
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="a data dir that does not exist yet (shown in the header)")
    parser.add_argument("--listen", default="127.0.0.1:0",
                        help="the gRPC address (shown in the header; default a free port)")
    args = parser.parse_args()
    if args.data_dir.exists():
        parser.error(f"{args.data_dir} exists: give a path that does not")
    config = ServerConfig(listen=args.listen, data_dir=str(args.data_dir))
    embedder = Embedder(model_files(EmbeddingConfig().model), **config.embedder_options())
    try:
        site = start_site(config, embedder, listen=args.listen)
        try:
            fill(site.live)
            converse(site.live)
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
                tab = browser.new_page(viewport=VIEWPORT, java_script_enabled=False)
                timeline(tab, site.base, args.out)
                browser.close()
        finally:
            site.live.close()
    finally:
        shutil.rmtree(args.data_dir, ignore_errors=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
