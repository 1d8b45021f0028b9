from __future__ import annotations

import pytest

from sidecar.errors import InvalidArgument
from sidecar.knobs import check_ranges
from sidecar.retrieval.config import RelationMultipliers, RetrievalConfig


@pytest.mark.parametrize(("config", "key"), [
    (RetrievalConfig(rrf_k=0), "retrieval.rrf_k"),
    (RetrievalConfig(lexical_weight=-1), "retrieval.lexical_weight"),
    (RetrievalConfig(graph_seed_threshold=1.5), "retrieval.graph_seed_threshold"),
    (RetrievalConfig(relation_multipliers=RelationMultipliers(updates=-1)),
     "retrieval.relation_multipliers.updates"),
])
def test_check_ranges_names_the_key(config: RetrievalConfig, key: str) -> None:
    with pytest.raises(InvalidArgument, match=key) as err:
        check_ranges(config, "retrieval")
    assert err.value.field == key
    check_ranges(RetrievalConfig(), "retrieval")
