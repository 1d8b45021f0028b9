"""A deterministic synthetic corpus with a Zipf-like vocabulary, stop words and unicode."""

from __future__ import annotations

import numpy as np

SENTENCES = [
    "We chose JWT over session tokens for the API.",
    "The auth module is in src/auth/ with 3 files.",
    "Grandma grows tomatoes and basil in the garden.",
    "Le café est fermé le lundi; l'équipe préfère le thé.",
    "Straße und STRASSE sind dasselbe Wort für die Suche.",
    "I had my car serviced on March 15th and the GPS stopped working.",
    "Ship v2.0 by the end of February — no excuses!",
    "東京 の 天気 は 晴れ です",
    "The the the of of a a an and",  # stop words only
    "",
]


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = [f"term{i}" for i in range(400)] + ["the", "a", "of", "and", "car", "gps", "tokens"]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    docs = list(SENTENCES)
    while len(docs) < n:
        size = int(rng.integers(1, 60))
        docs.append(" ".join(rng.choice(vocab, size=size, p=p)))
    return docs[:n]


QUERIES = [
    "JWT tokens for the API", "car GPS", "term1 term2 term3", "term17 term17 term250",
    "café thé", "strasse", "tomatoes garden", "天気", "unknownword term5", "term399",
    "the of and",  # stop words only: no lexical terms
]
