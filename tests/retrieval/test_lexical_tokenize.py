from __future__ import annotations

from sidecar.retrieval.lexical.tokenize import STOP_WORDS, Analyzer, query_terms, tokenize


def test_lowercase_unicode_and_punctuation() -> None:
    assert tokenize("Hello, WORLD! it's v2.0_beta") == ["hello", "world", "it", "s", "v2", "0",
                                                       "beta"]
    assert tokenize("Café FERMÉ") == ["café", "fermé"]
    assert tokenize("Straße") == tokenize("STRASSE") == ["strasse"]
    assert tokenize("ﬁle １２") == ["file", "12"]
    assert tokenize("東京 の 天気") == ["東京", "の", "天気"]
    assert tokenize("") == []


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
