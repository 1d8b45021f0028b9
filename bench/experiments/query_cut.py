"""What cutting a long query at fewer tokens (``[retrieval] query_max_tokens``) changes.

For the replay's user turns longer than ``--cut`` model tokens, embeds each in full (the
model's 256 cap) and cut, then searches the cached 10k replay store with each embedding
(same text for BM25) and compares the contextual candidates kept by Inject's cosine floor:
cosine between the two query vectors, Jaccard of the two kept sets, and their sizes. There is
no relevance label for these turns, so this measures change, not quality.

Run:  .venv/bin/python -m bench.experiments.query_cut [--cut 128] [--size 10000]
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.embed_threads import turns
from bench.replay_longmemeval import cached_store, working_copy
from sidecar.api.server_config import ServerConfig
from sidecar.app import App
from sidecar.embedding import Embedder, bundled_model_files
from sidecar.injection.config import MemoryInjectionConfig
from sidecar.retrieval.contract import SearchQuery


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cut", type=int, default=128)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    store = cached_store(args.size)
    embedder = Embedder(bundled_model_files())
    long = [t for t in turns() if embedder.count_tokens(t) + 2 > args.cut]
    inject = MemoryInjectionConfig()
    floor, limit = inject.contextual_min_score, inject.search_limit
    with working_copy(store) as data_dir:
        app = App.open(ServerConfig(listen="127.0.0.1:0", data_dir=str(data_dir)),
                       embedder=embedder)
        try:
            cosine, jaccard, full_n, cut_n = [], [], [], []
            for text in long:
                full, cut = embedder.embed_query(text), embedder.embed_query(text, args.cut)
                kept = []
                for vector in (full, cut):
                    hits = app.retriever.search(SearchQuery(
                        text, limit=limit, search_limit=limit, embedding=vector)).hits
                    kept.append({h.memory.id for h in hits if h.cosine >= floor})
                cosine.append(float(full @ cut))
                jaccard.append(len(kept[0] & kept[1]) / max(1, len(kept[0] | kept[1])))
                full_n.append(len(kept[0]))
                cut_n.append(len(kept[1]))
        finally:
            app.close()
    print(f"{len(long)} replay turns over {args.cut} model tokens, {args.size:,} memories, "
          f"floor {floor}, search_limit {limit}")
    print(f"query cosine full vs cut: mean {np.mean(cosine):.3f}, min {np.min(cosine):.3f}")
    print(f"contextual set Jaccard: mean {np.mean(jaccard):.3f}, median "
          f"{np.median(jaccard):.3f}, min {np.min(jaccard):.3f}")
    print(f"kept above the floor: full {np.mean(full_n):.1f}, cut {np.mean(cut_n):.1f}")


if __name__ == "__main__":
    from bench.results import recorded

    with recorded("query_cut"):
        main()
