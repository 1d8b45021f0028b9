"""bench/conversation_followups.py (sentences, evidence, turn kinds) and
bench/agent_loop_replay.py (block words, the merged config file)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from bench.agent_loop_replay import block_words, config_text, retention, retention_line
from bench.conversation_followups import KINDS, kind_of, load, split_sentences

STORY = 'Mr. Smith met Anna. "Why?" she asked!\nThey left. Then rain'


def test_sentences_keep_their_spans_and_skip_title_abbreviations() -> None:
    spans = split_sentences(STORY)
    assert [STORY[a:b] for a, b in spans] == [
        "Mr. Smith met Anna.", '"Why?"', "she asked!", "They left.", "Then rain"]


def test_evidence_is_every_sentence_overlapping_the_rationale(tmp_path: Path) -> None:
    start = STORY.index("Anna")
    answers = [
        {"input_text": "Anna", "span_start": start - 1, "span_end": start + 6, "turn_id": 1},
        {"input_text": "?", "span_start": -1, "span_end": -1, "turn_id": 2},
        {"input_text": "they left", "span_start": STORY.index("asked"),
         "span_end": STORY.index("Then") - 1, "turn_id": 3},
    ]
    questions = [{"input_text": q, "turn_id": i + 1}
                 for i, q in enumerate(["Who did Mr. Smith meet?", "why", "What did they do?"])]
    path = tmp_path / "coqa.json"
    path.write_text(json.dumps({"data": [{"id": "c", "story": STORY, "questions": questions,
                                          "answers": answers}]}))
    [conv] = load(path)
    assert [sorted(t.evidence) for t in conv.turns] == [["c#0"], ["c#2", "c#3"]]
    assert [t.kind for t in conv.turns] == [KINDS[0], KINDS[2]]


def test_turn_kinds() -> None:
    assert kind_of(0, "who created him?") == "first turn"
    assert kind_of(1, "Why?") == "elliptical follow-up"
    assert kind_of(2, "who created him?") == "elliptical follow-up"
    assert kind_of(3, "What colour was the small boat in the harbour?") == "follow-up"


def test_block_words_count_item_lines_only() -> None:
    block = ("[Context from memory]\n[Relevant to this message]\n[Fact] Walt Disney made a "
             "mouse.\n[Fact] It talked.\n[memsidecar:0123456789abcdef]")
    assert block_words(block) == 7 and block_words("") == 0


def test_config_file_keys_win_over_the_bench_defaults(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text("[defaults.memory_injection]\nmax_total = 8\nscore_floor = 0.2\n")
    merged = tomllib.loads(config_text(extra, 5, {"embedding": {"model": "minilm-fp32"}}))
    assert merged["defaults"]["memory_injection"] == {"max_total": 8, "score_floor": 0.2}
    assert merged["embedding"] == {"model": "minilm-fp32"}
    assert tomllib.loads(config_text(None, 5))["defaults"]["memory_injection"]["max_total"] == 5


def test_retention_counts_every_own_hit_the_search_top_and_duplicates_in_view() -> None:
    alone = ["a", "b", "c", "d", "e"]  # the text alone's block, best first
    assert retention(alone, {"a", "c", "e", "x"}, 3) == (5, 3, 3, 2, 0)
    assert retention(alone, {"a", "c"}, 3, {"b", "d"}) == (5, 2, 3, 2, 1)  # d is not of the top
    assert retention(alone[:2], {"a", "b"}, 3) == (2, 2, 2, 2, 0)
    assert retention([], {"a"}, 3) == (0, 0, 0, 0, 0)
    line = retention_line([(5, 3, 3, 2, 1), (2, 2, 2, 2, 0)], 3)
    assert "5 of 7" in line and "4 of 5" in line and line.count("turns with a miss: 1") == 2
    assert "of the 1 missed 1 semantic duplicates" in line
