from __future__ import annotations

import pytest

from sidecar.retrieval.config import RetrievalConfig


def test_config_validation_names_the_key() -> None:
    with pytest.raises(ValueError, match="retrieval.rrf_k"):
        RetrievalConfig(rrf_k=0)
    with pytest.raises(ValueError, match="retrieval.lexical_weight"):
        RetrievalConfig(lexical_weight=-1)
    with pytest.raises(ValueError, match="retrieval.graph_seed_threshold"):
        RetrievalConfig(graph_seed_threshold=1.5)
    assert "graph_seed_limit" in RetrievalConfig.keys()
