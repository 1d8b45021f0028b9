"""Token counts for budgets and block statistics, at a few microseconds a line.

The model's tokenizer (BERT WordPiece) normalises a text, cuts it into words at whitespace
and at each punctuation character, and cuts each word into pieces on its own: a text's
count is the sum of its words' counts. In printable ASCII (no character the normaliser
removes, so no two words are joined) a word is a run of letters and digits or one other
visible character; each distinct word is counted by the tokenizer once and remembered.
Other texts (any other character, or one of the tokenizer's own tokens such as "[SEP]",
which it keeps whole) are counted by the tokenizer whole.
"""

from __future__ import annotations

import re

from tokenizers import Tokenizer

# Distinct words remembered; dropped when full (a few MB at most).
MAX_WORDS = 100_000

_PRINTABLE = re.compile(r"[\t\n\r\x20-\x7e]*")
_WORD = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\t\n\r ]")


class TokenCounter:
    """``count(text)``: tokens of ``text`` without special tokens or truncation."""

    def __init__(self, tokenizer: Tokenizer, max_words: int = MAX_WORDS) -> None:
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self._own = tuple(t.content for t in tokenizer.get_added_tokens_decoder().values())
        self._max = max_words
        self._words: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if _PRINTABLE.fullmatch(text) is None or any(own in text for own in self._own):
            return self.exact(text)
        words, total = self._words, 0
        for word in _WORD.findall(text):
            count = words.get(word)
            if count is None:
                count = self.exact(word)
                if len(words) >= self._max:
                    words.clear()
                words[word] = count
            total += count
        return total

    def exact(self, text: str) -> int:
        """The tokenizer's own count (the reference)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
