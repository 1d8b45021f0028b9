"""The lexical analyser shared by indexing and querying.

Rules (the same for documents and queries, so a term always matches itself):

1. Unicode NFKC normalisation (full-width forms, ligatures and compatibility characters fold
   to their plain form: "ﬁle" -> "file", "１２" -> "12") then ``str.casefold`` (lowercase
   that also folds "ß" -> "ss", Greek final sigma, ...).
2. A token is a maximal run of Unicode letters or digits (``[^\\W_]+``): punctuation,
   underscores, whitespace and symbols separate tokens. Apostrophes split ("don't" -> "don",
   "t"); accents are kept ("café" stays "café"), so scripts other than Latin work unchanged.
3. Documents keep every token (document length counts them all). Queries drop the English
   stop words in ``STOP_WORDS`` (a query of stop words only has no lexical terms). Stop words
   get no postings in the index, but still count in document length and document frequency,
   so scores equal textbook BM25 over the full token stream.
4. With stemming on (``Analyzer(stemming=True)``, ``[retrieval] bm25_stemming``), every token
   that is not a stop word becomes its Snowball English stem ("flights" -> "flight",
   "enjoying" -> "enjoy"); a stem that would be a stop word ("others" -> "other") keeps the
   token as it was, so stop words stay exactly the tokens of ``STOP_WORDS``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from sidecar.retrieval.lexical.stem import stem_words

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# A standard English list (the classic SMART/NLTK core), plus the fragments the apostrophe
# rule produces ("don't" -> "don" "t").
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can could couldn d did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just ll m me might mightn
    more most must mustn my myself needn no nor not now o of off on once only or other our ours
    ourselves out over own re s same shall shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with won
    would wouldn y you your yours yourself yourselves
    """.split()
)


# ASCII: a letter or digit stays, every other byte becomes a space (rules 1-2 on ASCII text,
# which NFKC leaves as it is and casefold lowercases, are then a split at whitespace).
_ASCII_SEPARATORS = bytes(c if chr(c).isascii() and chr(c).isalnum() else 32
                          for c in range(256))


def tokenize(text: str) -> list[str]:
    """All tokens of a document, in order (rules 1-2)."""
    if text.isascii():  # the same tokens as ``unicode_tokens``, without the regex
        return text.lower().encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    return unicode_tokens(text)


def unicode_tokens(text: str) -> list[str]:
    """Rules 1-2 for any text (``tokenize``'s reference)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def query_terms(text: str) -> list[str]:
    """The tokens of a query with stop words dropped (rule 3). Duplicates are kept: BM25 Okapi
    (and rank-bm25) adds a term's contribution once per occurrence in the query."""
    return [t for t in tokenize(text) if t not in STOP_WORDS]


@dataclass(frozen=True, slots=True)
class Analyzer:
    """Rules 1-4: the one analyser a BM25 index uses for its documents and its queries."""

    stemming: bool = False

    @property
    def name(self) -> str:
        """Saved with the postings: postings built by another analyser are rebuilt."""
        return "snowball-english" if self.stemming else "plain"

    def terms(self, text: str) -> list[str]:
        """All terms of a document, in order."""
        return self._stem(tokenize(text))

    def query_terms(self, text: str) -> list[str]:
        """The terms of a query, stop words dropped (duplicates kept)."""
        return self._stem(query_terms(text))

    def _stem(self, tokens: list[str]) -> list[str]:
        if not self.stemming:
            return tokens
        terms = list(map(_TERMS.get, tokens))
        if None not in terms:
            return terms  # type: ignore[return-value]
        new = list(dict.fromkeys(t for t, term in zip(tokens, terms, strict=True)
                                 if term is None))
        found = dict(zip(new, stemmed_terms(new), strict=True))
        if len(_TERMS) + len(new) > MAX_TERMS:
            _TERMS.clear()
        _TERMS.update(found)
        return [found[t] if term is None else term
                for t, term in zip(tokens, terms, strict=True)]


def stemmed_terms(tokens: list[str]) -> list[str]:
    """Rule 4 for each token (the reference ``Analyzer(stemming=True)`` remembers)."""
    return [t if t in STOP_WORDS or s in STOP_WORDS else s
            for t, s in zip(tokens, stem_words(tokens), strict=True)]


# Rule 4's term of each word seen, shared by every thread (a word's term depends on the word
# alone): a document's terms are then a dictionary read per token. Dropped when full.
MAX_TERMS = 200_000
_TERMS: dict[str, str] = {}


PLAIN = Analyzer()
