"""The ``[defaults.memory_injection]`` / ``[agents.memory_injection]`` section: one immutable
version of the memory-injection settings, each knob's meaning and range on its field."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.knobs import knob, unit
from sidecar.records import MemoryType

PINNED_SORTS = ("recent", "importance")
PINNED_SOURCES = ("types", "snapshot")
CAPTURE_MODES = ("off", "user", "all")


@dataclass(frozen=True, slots=True)
class MemoryInjectionConfig:
    enabled: bool = field(default=True, metadata=knob(
        "Inject at all; false = Inject returns an empty block."))
    search_limit: int = field(default=20, metadata=knob(
        "Most hybrid-search results considered per turn.", ge=1, le=1000))
    # Chosen from the evidence kept vs unrelated turns let through on LongMemEval
    # (docs/decisions/0001-cosine-floor.md, bench/experiments/cosine_floor.py).
    contextual_min_score: float = field(default=0.25, metadata=unit(
        "Cosine floor of a contextual (searched) candidate."))
    # The next four chosen on the LongMemEval replay at 5.4k and 100k memories, score fusion
    # (bench/floor_replay.py, docs/decisions/0011-relevance-floor.md): a fused-score floor and
    # a store-calibrated cosine floor cut unrelated hits at little evidence lost; a cosine floor
    # relative to the best hit cost more evidence for the same cut; most of what similarity
    # lets through comes from other conversations, which the channel a memory was written in
    # tells apart.
    relative_floor: float = field(default=0.0, metadata=unit(
        "Keep a contextual hit whose cosine is at least this x the turn's best cosine (or "
        "that passes score_floor); 0 = off."))
    score_floor: float = field(default=0.4, metadata=unit(
        "Keep a contextual hit whose fused score is at least this x the turn's best fused "
        "score (or that passes relative_floor); 0 = off."))
    background_floor: float = field(default=2.0, metadata=knob(
        "Drop a contextual hit whose cosine is less than this many standard deviations above "
        "the store's mean cosine to the turn text; 0 = off.", ge=0.0, le=100.0))
    own_channel_boost: float = field(default=0.75, metadata=knob(
        "In score_floor, a contextual hit written in the turn's own channel counts (1 + "
        "this) x its fused score, so hits from other channels must come closer to it; "
        "0 = off.", ge=0.0, le=100.0))
    semantic_threshold: float = field(default=0.85, metadata=unit(
        "Cosine at or above which a candidate duplicates something recently injected."))
    context_window_depth: int = field(default=10, metadata=knob(
        "Turns before the same memory may be injected again, when history_pruned is false.",
        ge=0, le=100_000))
    ambient_enabled: bool = field(default=False, metadata=knob(
        "Master switch of pinned (ambient) retrieval."))
    pinned_types: tuple[MemoryType, ...] = field(default=(), metadata=knob(
        'Memory types always injected when ambient_enabled, e.g. ["todo", "goal"].'))
    pinned_limit: int = field(default=3, metadata=knob(
        "Most pinned memories per pinned type.", ge=1, le=1000))
    pinned_sort: str = field(default="recent", metadata=knob(
        "Which pinned memories come first.", choices=PINNED_SORTS))
    max_total: int = field(default=25, metadata=knob(
        "Hard cap on memories injected per turn (pinned + contextual); at least "
        "pinned_limit x len(pinned_types) when ambient_enabled.", ge=1, le=10_000))
    max_tokens: int = field(default=0, metadata=knob(
        "Token budget of the block (0 = no token budget).", ge=0, le=10_000_000))
    max_injected_blocks_in_history: int = field(default=3, metadata=knob(
        "Injection blocks kept in the history (0 = ephemeral).", ge=0, le=1000))
    history_pruned: bool = field(default=True, metadata=knob(
        "The agent prunes blocks with PruneHistory (a memory is held back while a block "
        "carrying it is in view); false: blocks are never pruned, and a memory is held back "
        "for context_window_depth turns."))
    pinned_source: str = field(default="types", metadata=knob(
        'Pinned section from "types" (pinned_types) or the vault "snapshot".',
        choices=PINNED_SOURCES))
    item_age: bool = field(default=True, metadata=knob(
        'Each block line ends with how old the memory is at the turn: "(written 3 weeks '
        'ago)", from item_age_date_days on "(written 14 Mar 2024)" (4 to 6 tokens a '
        "line)."))
    query_context_turns: int = field(default=3, metadata=knob(
        "Earlier user turns of the channel (with the assistant's replies a PruneHistory "
        "showed) that steer a turn's search; 0 = the turn's text alone, as Search.",
        ge=0, le=8))
    query_context_terms: float = field(default=1.0, metadata=knob(
        "BM25 weight of those turns' terms against the turn's own (1 = as much); 0 = off.",
        ge=0.0, le=4.0))
    query_context_weight: float = field(default=0.5, metadata=knob(
        "Weight of those turns' embeddings added to the turn's own (1 = as much); 0 = off.",
        ge=0.0, le=4.0))
    query_context_focus: int = field(default=3, metadata=knob(
        "Memories written next to what the conversation drew on that a follow-up leaning on "
        "its context may add to its block, within max_total and max_tokens, after what its "
        "own text finds (never instead of it); 0 = off.", ge=0, le=20))
    # The next five measured on CoQA and LongMemEval conversations (docs/decisions/0018,
    # 0020 and 0034).
    query_context_focus_radius: int = field(default=12, metadata=knob(
        "Places on each side of a focus anchor, in its writer's own sequence of writes "
        "(agent, end user, source, channel), whose memories the focus may offer.", ge=1, le=200))
    query_context_focus_cohesion: float = field(default=0.2, metadata=unit(
        "Cosine to an anchor (other than itself) from which a neighbour reads like the "
        "conversation's memories: a terse follow-up takes it from 0.6 x "
        "contextual_min_score; a focused block takes the steered search's hits from it; a "
        "turn's own best hit under it for every anchor is far from the focus."))
    query_context_new_subject: float = field(default=0.7, metadata=unit(
        "Cosine from which a turn's own best hit, far from the conversation's focus, makes "
        "the turn a new subject: it is searched alone, neither steered nor focused; 1 = "
        "never."))
    query_context_focus_lead: float = field(default=0.32, metadata=unit(
        "Score (cosine to the steered query plus the BM25 share) from which an offer of "
        "the focus comes before a follow-up's own hits beyond query_context_own_hits; "
        "weaker offers come after them; 0 = every offer before them."))
    query_context_own_hits: int = field(default=3, metadata=knob(
        "How many of a follow-up's own hits (what its text alone would inject, in its "
        "search's ranking, a duplicate of one before it or of a memory in view not counted) "
        "come before everything the context and the focus add, so that they are never "
        "displaced; its further own hits come after the focus's offers that reach "
        "query_context_focus_lead; 0 = every own hit first.", ge=0, le=100))
    query_context_decay: float = field(default=0.5, metadata=unit(
        "Each earlier turn counts this x the turn after it (1 = all alike)."))
    item_age_date_days: int = field(default=90, metadata=knob(
        "Age in days from which item_age gives the date instead of a relative age.",
        ge=1, le=36_500))
    capture: str = field(default="off", metadata=knob(
        'Write the turns the sidecar sees as OBSERVATION memories of the agent (source '
        '"capture", through the vault\'s gates): "off"; "user": each user turn Inject '
        'receives; "all": also the assistant replies PruneHistory shows (docs/vault.md).',
        choices=CAPTURE_MODES))
    capture_max_per_user: int = field(default=0, metadata=knob(
        "Captured memories kept per end user (per channel for turns without user_id); the "
        "sweep erases the oldest beyond it for good (docs/users.md); 0 = unlimited.",
        ge=0, le=10_000_000))
    capture_ttl_days: float = field(default=0.0, metadata=knob(
        "Days a captured memory (and a capture record) is kept; the sweep erases older ones "
        "for good (docs/users.md); 0 = forever.", ge=0.0, le=36_500.0))


def pinned_budget(config: MemoryInjectionConfig) -> list[tuple[str, str]]:
    """max_total must leave room for the pinned slots it guarantees."""
    if not (config.ambient_enabled and config.pinned_source == "types" and config.pinned_types):
        return []
    need = config.pinned_limit * len(config.pinned_types)
    if config.max_total >= need:
        return []
    return [("max_total", f"must be at least pinned_limit x len(pinned_types) = "
                          f"{config.pinned_limit} x {len(config.pinned_types)} = {need} "
                          f"when ambient_enabled (effective values)")]
