"""Token counts by words against the tokenizer's own count of the whole text."""

from __future__ import annotations

import random

from tokenizers import Tokenizer

from sidecar.embedding.counting import TokenCounter
from sidecar.embedding.model_files import TOKENIZER
from tests.retrieval.sentences import docstring_sentences

# Characters that stress the word rule: punctuation, digits, whitespace kinds, characters the
# normaliser drops or splits on (controls, accents, CJK, emoji, zero-width), and the
# tokenizer's own tokens (kept whole).
PIECES = ["a", "Zebra", "don't", "2.3", "x_y", "e-mail", "http://x.io/a?b=1", "  ", "\t", "\n",
          "\r\n", "\x00", "\x0b", "\x0c", "\x1f", "\x7f", "café", "naïve", "東京", "🚀", "\u200b",
          "\u00a0", "[SEP]", "[CLS]", "[MASK]", "[PAD]", "[UNK]", "[Fact]", "[sep]", "##ing",
          "(written 3 days ago)", "x" * 120, "unbelievably", "ÄÖÜ", "ß", "İ", "ﬁle", "１２"]


def _counters() -> tuple[TokenCounter, TokenCounter]:
    return (TokenCounter(Tokenizer.from_file(str(TOKENIZER))),
            TokenCounter(Tokenizer.from_file(str(TOKENIZER)), max_words=50))


def test_prose_counts_as_the_tokenizer_counts_it() -> None:
    counter, small = _counters()
    sentences = docstring_sentences(["json", "os", "re", "typing", "random", "collections"])
    assert len(sentences) > 200
    for sentence in sentences * 2:  # the second pass reads remembered words
        expected = counter.exact(sentence)
        assert counter(sentence) == expected, sentence
        assert small(sentence) == expected, sentence  # a memo dropped when full


def test_every_character_class_counts_as_the_tokenizer_counts_it() -> None:
    counter, small = _counters()
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) + rng.choice(["", " ", ""])
                       for _ in range(rng.randint(0, 8)))
        expected = counter.exact(text)
        assert counter(text) == expected, repr(text)
        assert small(text) == expected, repr(text)
