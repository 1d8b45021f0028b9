"""Content-free turns: an acknowledgement, laughter, an emoji ("ok thanks", "lol", "cool",
"I see.", "👍") says nothing to search for. Such a turn gets an empty block, casts no vote
for the conversation's focus, steers no later turn and is not captured.

A turn is content-free when it has no word at all (an emoji, "..."), or when it holds an
acknowledgement word (``ACKNOWLEDGEMENTS``) and otherwise only stop words, and is not a
question: no "?" and no question word ("what", "why", ...; real users often leave the "?"
out). A question ("and?", "what else", "why") and a turn with any other word ("go on", "tell
me more") may continue the conversation and are searched as usual.
docs/decisions/0020-context-adds-never-takes.md has the measurement on CoQA questions and
LongMemEval user turns (``bench/content_free.py``).
"""

from __future__ import annotations

import re

from sidecar.retrieval.lexical.tokenize import STOP_WORDS

# Words that acknowledge, thank, laugh or greet, and carry nothing to look up on their own.
ACKNOWLEDGEMENTS: frozenset[str] = frozenset(
    """
    ok okay okey k kk oki okie alright allright thanks thank thx ty tysm cheers appreciate
    appreciated lol lmao rofl haha hahaha hah heh hehe xd cool nice great awesome perfect
    neat sweet good fine wonderful excellent amazing brilliant lovely see got gotcha
    understood understand noted right sure yes yeah yep yup ya yea indeed true wow oh ah
    aha ahh hmm hm mm uh um oops welcome bye goodbye hi hello hey sense makes
    interesting much lot really
    """.split()
)
QUESTION_WORDS = frozenset("what who whom whose which why how when where".split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_DIGIT = re.compile(r"\d")


def content_free(text: str) -> bool:
    """``text`` says nothing to search for (see the module docstring)."""
    if "?" in text or _DIGIT.search(text):
        return False
    words = _WORD.findall(text.lower())
    if not words:
        return True
    if QUESTION_WORDS.intersection(words) or not ACKNOWLEDGEMENTS.intersection(words):
        return False
    return all(w in ACKNOWLEDGEMENTS or w in STOP_WORDS or w.split("'")[0] in STOP_WORDS
               for w in words)
