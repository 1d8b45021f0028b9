"""Stand-in for the [retrieval] section until its owner's dataclass lands.

It names the knobs of the retrieval issue (3) so that section is validated (unknown keys are
errors) today. Its rules (meaning, range) live in ``sidecar/config/schema.py``
(RETRIEVAL_RULES), so swapping in the real dataclass is a change of import there. [vault]
uses the real ``sidecar.vault.config.VaultConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    rrf_k: int = 60
    importance_boost: float = 0.005  # alpha
    recency_boost: float = 0.005  # beta
    recency_half_life_days: float = 30.0
    graph_seed_threshold: float = 0.8
    graph_seed_limit: int = 20
    max_graph_depth: int = 2
    ef_search: int = 64
