"""Search: protobuf <-> domain conversion and request validation."""

from __future__ import annotations

from memsidecar.v1 import store_pb2

from sidecar.api.convert import memory_to_pb, memory_type
from sidecar.errors import InvalidArgument
from sidecar.memory.validation import is_blank
from sidecar.retrieval import stages
from sidecar.retrieval.contract import Hit, Mode, SearchQuery, SearchResult

MAX_LIMIT = 1000
DEFAULT_LIMIT = 10

_MODES = {
    store_pb2.SEARCH_MODE_UNSPECIFIED: Mode.HYBRID,
    store_pb2.SEARCH_MODE_HYBRID: Mode.HYBRID,
    store_pb2.SEARCH_MODE_VECTOR: Mode.VECTOR,
    store_pb2.SEARCH_MODE_LEXICAL: Mode.LEXICAL,
}


def search_query_from_pb(req: store_pb2.SearchRequest, default_search_limit: int) -> SearchQuery:
    """Validate a SearchRequest. ``search_limit`` 0 = max(configured, limit)."""
    if is_blank(req.query):
        raise InvalidArgument("query must be a non-blank string", field="query",
                              reason="EMPTY_QUERY")
    limit = req.limit or DEFAULT_LIMIT
    if limit > MAX_LIMIT:
        raise InvalidArgument(f"limit must be between 1 and {MAX_LIMIT} (got {req.limit})",
                              field="limit")
    if req.search_limit > MAX_LIMIT:
        raise InvalidArgument(
            f"search_limit must be between 0 and {MAX_LIMIT} (got {req.search_limit})",
            field="search_limit")
    mode = _MODES.get(req.mode)
    if mode is None:
        raise InvalidArgument(
            f"mode must be one of HYBRID, VECTOR, LEXICAL (got {req.mode})", field="mode",
            reason="BAD_ENUM")
    return SearchQuery(
        text=req.query,
        agent_id=req.agent_id,
        user_id=req.user_id,
        limit=limit,
        types=tuple(dict.fromkeys(memory_type(t, "types") for t in req.types)),
        mode=mode,
        search_limit=req.search_limit or max(default_search_limit, limit),
    )


# Stage -> its StageTimings field; every stage also goes into StageTimings.stages_us.
_STAGE_FIELDS = {name: f"{name}_us" for name in stages.ALL}


def search_response_to_pb(result: SearchResult, debug: bool) -> store_pb2.SearchResponse:
    response = store_pb2.SearchResponse(hits=[search_hit_to_pb(h) for h in result.hits])
    if debug:
        timings = result.timings_us
        response.debug.CopyFrom(store_pb2.StageTimings(
            **{_STAGE_FIELDS[k]: v for k, v in timings.items() if k in _STAGE_FIELDS},
            stages_us=timings))
    return response


def search_hit_to_pb(hit: Hit) -> store_pb2.SearchHit:
    ranks = {r.name: r.rank for r in hit.ranks}
    return store_pb2.SearchHit(
        memory=memory_to_pb(hit.memory), score=hit.score, cosine=hit.cosine,
        vector_rank=ranks.get(stages.VECTOR, 0), lexical_rank=ranks.get(stages.LEXICAL, 0),
        graph_rank=ranks.get(stages.GRAPH, 0),
        sources=[{"name": r.name, "rank": r.rank, "weight": r.weight} for r in hit.ranks],
    )
