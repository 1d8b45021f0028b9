"""Snowball English stemming (PyStemmer, the one module that imports it).

A ``Stemmer.Stemmer`` is not thread-safe: each thread gets its own (with its own cache).
"""

from __future__ import annotations

import threading

import Stemmer

_local = threading.local()


def stem_words(words: list[str]) -> list[str]:
    """The Snowball English stem of each word, in order."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWords(words)  # type: ignore[no-any-return]
