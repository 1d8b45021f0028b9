"""PII and secret detection: which kinds of sensitive data a text contains, never what.

Each detector is a regex plus, where a regex alone would trip on ordinary text, a check:
Luhn and a card-network prefix for payment cards, character classes and Shannon entropy for
unlabelled secrets. Text is folded first (``fold``: fullwidth, mathematical and other scripts'
digits read as ASCII digits), and the number detectors read any run of spaces, dashes or
punctuation between two digits as a separator (``number_text``). Results are kinds ("ssn",
"payment_card", ...); the matched text is never returned, so it cannot leak into errors or logs.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable

# Invisible format characters (Unicode Cf: zero-width space/joiners, word joiner, BOM, soft
# hyphen, bidi marks) are removed before any detector runs: they cannot hide a value.
INVISIBLE = re.compile(r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                       r"\u2066-\u206f\ufeff]")
# A decimal digit of any script (Unicode Nd) other than ASCII: read as its ASCII digit.
OTHER_DIGIT = re.compile(r"(?![0-9])\d")
# A run of non-word characters (or underscores) between two digits, a separator candidate.
BETWEEN_DIGITS = re.compile(r"(?<=[0-9])[\W_]+(?=[0-9])")
LIST_PUNCTUATION = frozenset(",;:")
# Identifiers whose digits are no number: a UUID (8-4-4-4-12 hex digits, never read across
# its dashes) and a hex digest (32+ hex characters with a letter: MD5, SHA-1, SHA-256). A
# random one of either holds a Luhn-valid card-like run about once in 1,000.
IDENTIFIER = re.compile(
    r"(?<![0-9A-Za-z])(?<![0-9]-)[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"
    r"(?![0-9A-Za-z])(?!-[0-9])"
    r"|(?<![0-9A-Za-z])(?=[0-9]*[A-Fa-f])[0-9A-Fa-f]{32,}(?![0-9A-Za-z])")
HEX_RUN = re.compile(r"[0-9A-Fa-f]{8}")  # what every identifier starts with: a cheap first test
SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
# 13-19 digits, each pair separated by at most one separator; any prefix (``billing:4111...``,
# ``card4111...``) may touch the first digit.
CARD = re.compile(r"(?<!\d)(?<!\d[-,])\d(?:[-,]?\d){12,18}(?![-,]?\d)")
PASSWORD = re.compile(
    r"\b(?:password|passwd|passphrase|passcode|pwd)\s*[:=]\s*[^\s,;]{3,}", re.IGNORECASE
)
API_KEYS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![A-Za-z0-9_-])sk-(?:[A-Za-z]+-)?[A-Za-z0-9_-]{20,}"),  # OpenAI/Anthropic
    re.compile(r"(?<![A-Za-z0-9_])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}"),  # GitHub
    re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}"),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),  # AWS access key id
    re.compile(r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")

# Card-network prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay).
CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2))")
MIN_SECRET_ENTROPY = 4.2  # bits per character; hex digests top out at 4.0


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _separator(match: re.Match[str]) -> str:
    """A run between two digits as one separator: ``-`` for spaces, dashes and punctuation of
    any script, ``,`` when it holds list punctuation (so ``100, 20, 3000`` is no SSN); kept
    as is when anything else (a symbol, an emoji) is in it."""
    run = match.group()
    if not all(c.isspace() or unicodedata.category(c)[0] == "P" for c in run):
        return run
    return "," if LIST_PUNCTUATION.intersection(run) else "-"


def fold(text: str) -> str:
    """``text`` as the detectors read it: no invisible characters, compatibility forms folded
    (Unicode NFKC: fullwidth and mathematical digits and letters) and every script's decimal
    digits as ASCII digits."""
    text = INVISIBLE.sub("", text)
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    return OTHER_DIGIT.sub(lambda m: str(unicodedata.digit(m.group())), text)


def number_text(folded: str) -> str:
    """A folded text as the number detectors (SSN, card) read it: identifiers (UUIDs, hex
    digests) masked, every separator run between two digits as one ``-`` or ``,``."""
    if HEX_RUN.search(folded):
        folded = IDENTIFIER.sub("id", folded)
    return BETWEEN_DIGITS.sub(_separator, folded)


def _has_card(text: str) -> bool:
    for match in CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and CARD_PREFIX.match(digits) and luhn_valid(digits):
            return True
    return False


def _has_api_key(text: str) -> bool:
    return any(p.search(text) for p in API_KEYS)


def _looks_random(token: str) -> bool:
    classes = sum((any(c.islower() for c in token), any(c.isupper() for c in token),
                   any(c.isdigit() for c in token)))
    return classes == 3 and shannon_entropy(token) >= MIN_SECRET_ENTROPY


def _has_secret(text: str) -> bool:
    return any(_looks_random(m.group()) for m in TOKEN.finditer(text))


# (kind, reads number_text rather than the folded text, detector)
DETECTORS: tuple[tuple[str, bool, Callable[[str], bool]], ...] = (
    ("ssn", True, lambda t: SSN.search(t) is not None),
    ("payment_card", True, _has_card),
    ("password", False, lambda t: PASSWORD.search(t) is not None),
    ("api_key", False, _has_api_key),
    ("jwt", False, lambda t: JWT.search(t) is not None),
    ("secret", False, _has_secret),
)


def find_pii(text: str) -> tuple[str, ...]:
    """Kinds of sensitive data found in ``text``, in a fixed order; empty when clean.

    A JWT or API key is reported as such and not again as a generic high-entropy secret.
    """
    folded = fold(text)
    numbers = number_text(folded)
    kinds = [kind for kind, on_numbers, detect in DETECTORS
             if detect(numbers if on_numbers else folded)]
    if "secret" in kinds and ({"api_key", "jwt"} & set(kinds)):
        kinds.remove("secret")
    return tuple(kinds)


@functools.lru_cache(maxsize=4096)
def find_pii_in_name(value: str) -> tuple[str, ...]:
    """``find_pii`` for a name or id (``agent_id``, ``source``, ...), which is logged and kept in
    histories: every kind but the generic high-entropy ``secret``, which a random id is."""
    return tuple(kind for kind in find_pii(value) if kind != "secret")
