from __future__ import annotations

import random
import threading

import pytest

from sidecar.retrieval.lexical import tokenize as tokenize_module
from sidecar.retrieval.lexical.tokenize import (
    STOP_WORDS,
    Analyzer,
    query_terms,
    stemmed_terms,
    tokenize,
    unicode_tokens,
)
from tests.retrieval.sentences import docstring_sentences


def test_lowercase_unicode_and_punctuation() -> None:
    assert tokenize("Hello, WORLD! it's v2.0_beta") == ["hello", "world", "it", "s", "v2", "0",
                                                       "beta"]
    assert tokenize("Café FERMÉ") == ["café", "fermé"]
    assert tokenize("Straße") == tokenize("STRASSE") == ["strasse"]
    assert tokenize("ﬁle １２") == ["file", "12"]
    assert tokenize("東京 の 天気") == ["東京", "の", "天気"]
    assert tokenize("") == []


def test_ascii_texts_are_cut_as_the_unicode_rules_cut_them() -> None:
    """``tokenize``'s ASCII path against the rules' regex: every ASCII character (controls,
    ``_``, ``'``, DEL) in random texts, and real sentences."""
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(128)] + list("aZ9 ") * 20
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 80))) for _ in range(3000)]
    texts += docstring_sentences(["json", "os", "re", "typing", "email"])
    texts += ["", " ", "_", "a_b", "x\x00y", "C3PO's 2nd"]
    assert all(t.isascii() for t in texts[:3000])
    for text in texts:
        assert tokenize(text) == unicode_tokens(text), repr(text)
    assert tokenize("Hello_World\tDON'T 42x") == ["hello", "world", "don", "t", "42x"]


def test_queries_drop_stop_words_documents_keep_them() -> None:
    assert "the" in STOP_WORDS
    assert tokenize("the car of the year") == ["the", "car", "of", "the", "year"]
    assert query_terms("the car of the year") == ["car", "year"]
    assert query_terms("What is the GPS? GPS!") == ["gps", "gps"]  # duplicates kept
    assert query_terms("the of and") == []


def test_plain_analyser_is_the_tokenizer() -> None:
    plain = Analyzer()
    text = "The Flights were running late"
    assert plain.terms(text) == tokenize(text)
    assert plain.query_terms(text) == query_terms(text)


def test_stemming_is_shared_by_documents_and_queries() -> None:
    stem = Analyzer(stemming=True)
    assert stem.terms("The flights were running, others enjoyed it") == [
        "the", "flight", "were", "run", "others", "enjoy", "it"]  # "others" -> "other": a stop word
    assert stem.query_terms("the flights were running") == ["flight", "run"]
    for word in ("flight", "flights", "Flights"):
        assert stem.query_terms(word) == stem.terms(word) == ["flight"]
    assert all(stem.terms(w) == [w] for w in STOP_WORDS)  # stop words are never stemmed
    assert stem.name != Analyzer().name


def test_remembered_terms_are_the_stemmers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terms read from the memo of words seen against stemming each text afresh, on prose,
    while the memo fills, is dropped when full (a small cap here) and is dropped by another
    thread between the reads."""
    monkeypatch.setattr(tokenize_module, "MAX_TERMS", 300)
    monkeypatch.setattr(tokenize_module, "_TERMS", {})
    stem = Analyzer(stemming=True)
    texts = docstring_sentences(["json", "os", "re", "typing", "email"])
    assert len(texts) > 200
    for text in texts * 2:
        expected = stemmed_terms(tokenize(text))
        assert stem.terms(text) == expected, text
        assert stem.query_terms(text) == stemmed_terms(query_terms(text)), text
        assert len(tokenize_module._TERMS) <= 300
    stop = threading.Event()

    def drop() -> None:
        while not stop.is_set():
            tokenize_module._TERMS.clear()

    dropper = threading.Thread(target=drop)
    dropper.start()
    try:
        for text in texts:
            assert stem.terms(text) == stemmed_terms(tokenize(text)), text
    finally:
        stop.set()
        dropper.join()
