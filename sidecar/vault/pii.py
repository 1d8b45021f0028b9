"""PII and secret detection: which kinds of sensitive data a text contains, never what.

Each detector is a regex plus, where a regex alone would trip on ordinary text, a check:
Luhn and a card-network prefix for payment cards, character classes, Shannon entropy and
their spread for unlabelled secrets, a digest's name before a hex run, and the value after a
credential word for passwords and credentials said in words (``sidecar.vault.credentials``;
docs/decisions/0019-secrets-in-chat.md). Text is folded first (``fold``: fullwidth,
mathematical and other scripts' digits read as ASCII digits), and the number detectors read
any run of spaces, dashes or punctuation between two digits as a separator
(``number_text``). Results are kinds ("ssn", "payment_card", "password", "credential", ...);
the matched text is never returned, so it cannot leak into errors or logs.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable

from sidecar.vault.credentials import said_credential, said_password

# Invisible format characters (Unicode Cf: zero-width space/joiners, word joiner, BOM, soft
# hyphen, bidi marks) are removed before any detector runs: they cannot hide a value.
INVISIBLE = re.compile(r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                       r"\u2066-\u206f\ufeff]")
# A decimal digit of any script (Unicode Nd) other than ASCII: read as its ASCII digit.
OTHER_DIGIT = re.compile(r"(?![0-9])\d")
# A run of non-word characters (or underscores) between two digits, a separator candidate.
# (a digit written starting the match rather than looked behind for: faster to search)
BETWEEN_DIGITS = re.compile(r"[0-9][\W_]+(?=[0-9])")
LIST_PUNCTUATION = frozenset(",;:")
DIGITS = "0123456789"
MIN_NUMBER_DIGITS = 9  # the fewest digits of a number detector's match (an SSN's)
# Identifiers whose digits are no number: a UUID (8-4-4-4-12 hex digits, never read across
# its dashes) and a hex digest (32+ hex characters with a letter: MD5, SHA-1, SHA-256). A
# random one of either holds a Luhn-valid card-like run about once in 1,000.
IDENTIFIER = re.compile(
    r"(?<![0-9A-Za-z])(?<![0-9]-)[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"
    r"(?![0-9A-Za-z])(?!-[0-9])"
    r"|(?<![0-9A-Za-z])(?=[0-9]*[A-Fa-f])[0-9A-Fa-f]{32,}(?![0-9A-Za-z])")
HEX_RUN = re.compile(r"[0-9A-Fa-f]{8}")  # what every identifier starts with: a cheap first test
SSN = re.compile(r"\d{3}(?<![\d-]\d{3})(?<!000)(?<!666)(?<!9\d\d)-(?!00)\d{2}-(?!0000)\d{4}"
                 r"(?![\d-])")
# 13-19 digits, each pair separated by at most one separator; any prefix (``billing:4111...``,
# ``card4111...``) may touch the first digit.
CARD = re.compile(r"\d(?<!\d\d)(?<!\d[-,]\d)(?:[-,]?\d){12,18}(?![-,]?\d)")
# Token formats by their fixed prefix. Each literal prefix is in ``KEY_PREFIXES`` too: a text
# without any of them is not searched further.
API_KEYS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![A-Za-z0-9_-])sk-(?:[A-Za-z]+-)?[A-Za-z0-9_-]{20,}"),  # OpenAI/Anthropic
    re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    re.compile(r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9+/=]{24,}"),  # Stripe webhook secret
    re.compile(r"(?<![A-Za-z0-9_])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}"),  # GitHub
    re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}"),
    re.compile(r"(?<![A-Za-z0-9_])gl(?:pat|dt|rt|ptt|soat|cbt|imt|ft|agent)-[A-Za-z0-9_-]{20,}"),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),  # AWS access key id
    re.compile(r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"(?<![A-Za-z0-9_])(?:ya29\.|GOCSPX-)[0-9A-Za-z_-]{20,}"),  # Google OAuth
    re.compile(r"(?<![A-Za-z0-9_])xox[abposre]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"(?<![A-Za-z0-9_])xapp-\d-[A-Za-z0-9-]{20,}"),  # Slack app token
    re.compile(r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
    re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"),  # npm
    re.compile(r"(?<![A-Za-z0-9_])pypi-AgE[A-Za-z0-9_-]{40,}"),  # PyPI
    re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    re.compile(r"(?<![A-Za-z0-9_])SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}"),  # SendGrid
    re.compile(r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean
    re.compile(r"(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),  # Shopify
    re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}"),  # Telegram bot
    re.compile(r"\bBearer\s+(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{20,}"),
    re.compile(r"\bAuthorization\W{0,4}Basic\s+[A-Za-z0-9+/]{8,}={0,2}"),  # HTTP basic auth
    re.compile(r"\bBasic\s+(?=[A-Za-z+/]*[0-9+/])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/])"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
KEY_PREFIXES = (
    "sk-", "sk_", "rk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glimt-", "glft-", "glagent-", "AKIA",
    "ASIA", "AIza", "ya29.", "GOCSPX-", "xox", "xapp-", "hooks.slack", "npm_", "pypi-", "hf_",
    "SG.", "_v1_", "shp", ":AA", "Bearer", "Basic", "-----BEGIN")
JWT = re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"
                 r"\.[A-Za-z0-9_-]{8,}")
TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{20,}")
# 32+ hex characters with a letter and a digit: a bearer token, or a digest; a digest is named
# as one in the words just before it ("commit 3f78...", "sha256: ...") and then passes.
HEX_TOKEN = re.compile(r"(?<![0-9A-Za-z])(?=[0-9]*[A-Fa-f])(?=[A-Fa-f]*[0-9])[0-9A-Fa-f]{32,}"
                       r"(?![0-9A-Za-z])")
DIGEST_LABEL = re.compile(
    r"\b(?:commit|commits|committed|sha|sha-?1|sha-?2|sha-?224|sha-?256|sha-?384|sha-?512|"
    r"md5|hash|hashes|hashed|checksum|digest|revision|rev|git|blob|tree|etag|fingerprint|"
    r"integrity|merge|merged|cherry-pick(?:ed)?|revert(?:ed)?|HEAD)\b[^.!?\n]{0,24}$",
    re.IGNORECASE)

# Card-network prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay).
CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2))")
MIN_SECRET_ENTROPY = 4.2  # bits per character, 32+ characters; hex digests top out at 4.0
# 20-31 characters (decision 0019): the entropy of a string of n distinct characters is
# log2(n), and a random string of letters and digits comes within ``SHORT_ENTROPY_SLACK`` of
# it; it changes class (lower, upper, digit) between ~62 % of its adjacent characters and
# follows ~58 % of its capitals with a capital or a digit, where a camel-case name
# ("HashMapIterator2Factory") follows almost none.
SHORT_ENTROPY_SLACK = 0.6
MIN_CLASS_CHANGES = 0.4
MIN_CAPITAL_RUNS = 0.2


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
    """A digit and the run after it up to the next digit, the run as one separator: ``-`` for
    spaces, dashes and punctuation of any script, ``,`` when it holds list punctuation (so
    ``100, 20, 3000`` is no SSN); kept as is when anything else (a symbol, an emoji) is in it."""
    digit, run = match.group()[0], match.group()[1:]
    if not all(c.isspace() or unicodedata.category(c)[0] == "P" for c in run):
        return digit + run
    return digit + ("," if LIST_PUNCTUATION.intersection(run) else "-")


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
    return any(p in text for p in KEY_PREFIXES) and any(p.search(text) for p in API_KEYS)


def _char_class(char: str) -> str:
    return "u" if char.isupper() else "l" if char.islower() else "d" if char.isdigit() else "o"


def _spread_like_random(token: str) -> bool:
    """Classes change between ``MIN_CLASS_CHANGES`` of adjacent characters, and
    ``MIN_CAPITAL_RUNS`` of the capitals are followed by a capital or a digit."""
    classes = [_char_class(c) for c in token]
    changes = sum(a != b for a, b in zip(classes, classes[1:], strict=False))
    capitals = [b for a, b in zip(classes, classes[1:], strict=False) if a == "u"]
    runs = sum(b in "ud" for b in capitals)
    return (changes >= MIN_CLASS_CHANGES * (len(token) - 1)
            and runs >= MIN_CAPITAL_RUNS * len(capitals) and bool(capitals))


def _looks_random(token: str) -> bool:
    """Lower case, upper case and digits, spread like a random string's: 32+ characters at
    ``MIN_SECRET_ENTROPY``; 20-31 within ``SHORT_ENTROPY_SLACK`` of the most a string of its
    length can hold, and spread like a random one (no camel-case name)."""
    classes = sum((any(c.islower() for c in token), any(c.isupper() for c in token),
                   any(c.isdigit() for c in token)))
    if classes < 3:
        return False
    entropy = shannon_entropy(token)
    if len(token) >= 32:
        return entropy >= MIN_SECRET_ENTROPY
    return (entropy >= math.log2(len(token)) - SHORT_ENTROPY_SLACK
            and _spread_like_random(token))


def _has_hex_token(text: str, start: int, end: int) -> bool:
    """A hex token between ``start`` and ``end`` that no digest label comes just before."""
    return any(not DIGEST_LABEL.search(text, max(0, m.start() - 48), m.start())
               for m in HEX_TOKEN.finditer(text, start, end))


def _has_secret(text: str) -> bool:
    return any(_looks_random(m.group()) or m.end() - m.start() >= 32
               and _has_hex_token(text, m.start(), m.end()) for m in TOKEN.finditer(text))


# (kind, reads number_text rather than the folded text, detector)
DETECTORS: tuple[tuple[str, bool, Callable[[str], bool]], ...] = (
    ("ssn", True, lambda t: SSN.search(t) is not None),
    ("payment_card", True, _has_card),
    ("password", False, said_password),
    ("credential", False, said_credential),
    ("api_key", False, _has_api_key),
    ("jwt", False, lambda t: JWT.search(t) is not None),
    ("secret", False, _has_secret),
)


@functools.lru_cache(maxsize=256)  # a turn is read by capture's screen and its query context
def find_pii(text: str) -> tuple[str, ...]:
    """Kinds of sensitive data found in ``text``, in a fixed order; empty when clean.

    A JWT or API key is reported as such and not again as a generic high-entropy secret.
    """
    folded = fold(text)
    # An SSN has 9 digits, a card 13+: a text with fewer is read by the other detectors only.
    numbers = number_text(folded) if sum(map(folded.count, DIGITS)) >= MIN_NUMBER_DIGITS \
        else None
    kinds = [kind for kind, on_numbers, detect in DETECTORS
             if not on_numbers and detect(folded)
             or on_numbers and numbers is not None and detect(numbers)]
    if "secret" in kinds and ({"api_key", "jwt"} & set(kinds)):
        kinds.remove("secret")
    return tuple(kinds)


@functools.lru_cache(maxsize=4096)
def find_pii_in_name(value: str) -> tuple[str, ...]:
    """``find_pii`` for a name or id (``agent_id``, ``source``, ...), which is logged and kept in
    histories: every kind but the generic high-entropy ``secret``, which a random id is."""
    return tuple(kind for kind in find_pii(value) if kind != "secret")
