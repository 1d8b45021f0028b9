"""Names of the timed stages of a search (keys of ``SearchResult.timings_us``).

The retrieval engine records them and the gRPC edge maps them to ``StageTimings``; a source's
stage is named after the source (``VECTOR``, ``LEXICAL``, ``GRAPH`` double as source names).
"""

from __future__ import annotations

EMBED = "embed"  # embedding the query
VECTOR = "vector"  # the vector source
LEXICAL = "lexical"  # the lexical (BM25) source
LEXICAL_WAIT = "lexical_wait"  # what BM25 on the pool thread added after the embedding
SOURCES = "sources"  # vector and lexical side by side (both also recorded on their own)
GRAPH = "graph"  # the graph-expansion source
FUSION = "fusion"  # score fusion (with the candidates' cosines) or weighted RRF, and boost
COSINE = "cosine"  # RRF: exact query cosine of the returned hits (score fusion: in FUSION)
HITS = "hits"  # building the hits from the mirror
TOTAL = "total"  # the whole search

ALL = (EMBED, VECTOR, LEXICAL, LEXICAL_WAIT, SOURCES, GRAPH, FUSION, COSINE, HITS, TOTAL)
