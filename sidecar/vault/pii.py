"""PII and secret detection: which kinds of sensitive data a text contains, never what.

Each detector is a regex plus, where a regex alone would trip on ordinary text, a check:
Luhn and a card-network prefix for payment cards, character classes and Shannon entropy for
unlabelled secrets. Results are kinds ("ssn", "payment_card", ...); the matched text is never
returned, so it cannot leak into errors or logs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

# Invisible format characters (Unicode Cf: zero-width space/joiners, word joiner, BOM, soft
# hyphen, bidi marks) are removed before any detector runs: they cannot hide a value.
INVISIBLE = re.compile(r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                       r"\u2066-\u206f\ufeff]")
SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\d-])")
# 13-19 digits, each pair separated by at most two of space, dot, dash, or nothing; any prefix
# (``billing:4111...``, ``card4111...``) may touch the first digit.
CARD = re.compile(r"(?<!\d)\d(?:[ .-]{0,2}\d){12,18}(?![ .-]{0,2}\d)")
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


def _has_card(text: str) -> bool:
    for match in CARD.finditer(text):
        digits = re.sub(r"[ .-]", "", match.group())
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


DETECTORS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("ssn", lambda t: SSN.search(t) is not None),
    ("payment_card", _has_card),
    ("password", lambda t: PASSWORD.search(t) is not None),
    ("api_key", _has_api_key),
    ("jwt", lambda t: JWT.search(t) is not None),
    ("secret", _has_secret),
)


def find_pii(text: str) -> tuple[str, ...]:
    """Kinds of sensitive data found in ``text``, in a fixed order; empty when clean.

    A JWT or API key is reported as such and not again as a generic high-entropy secret.
    """
    text = INVISIBLE.sub("", text)
    kinds = [kind for kind, detect in DETECTORS if detect(text)]
    if "secret" in kinds and ({"api_key", "jwt"} & set(kinds)):
        kinds.remove("secret")
    return tuple(kinds)
