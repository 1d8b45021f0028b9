"""Credentials said in words: "my password is Tr0ub4dor&3", "the wifi password: X", "the
door code is 4821", "X is my password", "https://bob:X@host".

A credential word (``PASSWORD_WORDS``, ``CODE_WORDS``, ``TOKEN_WORDS``) is followed, after at
most a short qualifier ("for the wifi", "to the router", "on my laptop"), by a link (``:``,
``=``, "is", "was", "'s", "set to", "changed to"), and then by a *value*: the next word, read
with its quotes and its trailing punctuation taken off. Whether it is a value depends on the
word: a password is any quoted word, any word with a digit, a symbol or an inner capital, or a
plain word that is no stop word and no description ("correct", "expired", "case-sensitive":
``DESCRIPTIONS`` and the suffixes of adjectives and participles); a PIN, a door code or a CVV
is 3 to 8 digits; a key or a token holds a digit and is at least 8 characters long. Without a link a
password word takes only a value no sentence holds ("wifi password Tr0ub4dor&3": letters and
digits, 6+ characters). Which values are found is never returned, only whether.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sidecar.retrieval.lexical.tokenize import STOP_WORDS

PASSWORD_WORDS = r"pass(?:word|phrase|code|wd)s?|pwd|pass\s+code"
CODE_WORDS = (r"pin(?:\s+(?:code|number))?|(?:door|gate|alarm|garage|lock|entry|access|"
              r"security|verification|safe|locker)\s+code|cvv2?|cvc|one[\s-]time\s+code|otp")
TOKEN_WORDS = (r"(?:api|secret|access|private|license|licence|product|encryption|ssh)\s+key|"
               r"(?:access|auth|api|bearer|refresh|session|bot|personal\s+access)\s+token|"
               r"client\s+secret|token|secret")
# After the credential word: an optional qualifier of a few words, then the link.
QUALIFIER = r"(?:\s+(?:for|to|of|on|at|in|with)\b[^.!?\n:=]{1,48}?)?"
LINK = (r"\s*(?:[:=]|=>|->)\s*"
        r"|\s+(?:(?:is|was|has\s+been|had\s+been)\s+)?(?:set|changed|updated|reset)\s+to\s+"
        r"|\s+(?:is|was|are|were|'s|’s|will\s+be|became|reads)"
        r"(?:\s+(?:now|still|just|actually|currently|simply|always))?\s+")
QUOTES = "\"'“‘`"
QUOTE = rf"[{QUOTES}]?"
VALUE = rf"(?P<quote>{QUOTE})(?P<value>\S{{3,64}})(?P<after>[^\S\n]*[^\s\"'”’`]?)"
# A credential word (searched in the lower-cased text, which is faster), then what follows it.
WORD = re.compile(
    rf"\b(?:(?P<password>{PASSWORD_WORDS})|(?P<code>{CODE_WORDS})|(?P<token>{TOKEN_WORDS}))\b")
WORD_ANY_CASE = re.compile(WORD.pattern, re.IGNORECASE)  # a text lower-casing changes in length
SAID = re.compile(rf"{QUALIFIER}(?P<link>{LINK}){VALUE}", re.IGNORECASE)
# "set my password to X"
SET_TO = re.compile(rf"\b(?:set|change|changed|reset|update|updated)\s+(?:my|the|our|your|his|"
                    rf"her|their)\s+(?:\w+\s+)?(?:{PASSWORD_WORDS})\s+to\s+{VALUE}",
                    re.IGNORECASE)
# "X is my password." / "X is the password for the wifi": the value is the word before it.
VALUE_FIRST = re.compile(
    rf"\s+(?:is|was)\s+(?:my|the|our|your|his|her|their)\s+(?:\w+\s+)?(?:{PASSWORD_WORDS})"
    rf"(?=\s*(?:$|[.,;!?)])|\s+(?:for|to|on|at)\b)", re.IGNORECASE)
# A password word right before a value no sentence holds ("password Tr0ub4dor&3").
UNLINKED = re.compile(rf"\b(?:{PASSWORD_WORDS})\s+{VALUE}", re.IGNORECASE)
# What every CODE_WORDS or TOKEN_WORDS phrase contains.
CREDENTIAL_HINTS = ("pin", "code", "cvv", "cvc", "otp", "key", "token", "secret")
# user:password@ in a URL (any scheme: https, postgres, redis, ftp, ...).
URL_CREDENTIALS = re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@]{1,64}:[^\s/@]{3,128}@[\w.-]")
# A hyphen or an apostrophe between letters ("case-sensitive", "dog's"): still a word.
JOINER = re.compile(r"(?<=[^\W\d_])['’-](?=[^\W\d_])")

EDGE = "\"'“”‘’`.,;:!?)(][*~"  # quotes, punctuation and markdown emphasis
# Words that describe a password rather than being one.
DESCRIPTIONS = frozenset("""
    correct incorrect wrong right weak strong long short simple easy hard same different new old
    good bad fine safe secure unsafe insecure unique complex valid invalid required optional
    empty blank missing common obvious hidden visible private public personal
    mandatory necessary needed important useless useful working broken like also there here
    similar identical special random temporary default unknown known forgotten lost stolen
    compromised changeable reusable easier harder longer shorter stronger weaker better worse
    one two three four five six seven eight nine ten twelve several many few character
    characters letters digits numbers words enough something anything nothing everything
    what which your my our their his her its reset set sent shown given taken written kept
    stuck whatever never ever however together other rather
""".split())
DESCRIPTION_SUFFIXES = ("ed", "ing", "ly", "ful", "less", "ous", "ive", "able", "ible", "al",
                        "ic", "ent", "ant", "ary", "ory", "est", "ish")
SYMBOL = re.compile(r"[^\w\s]|_")


def _value(match: re.Match[str]) -> tuple[bool, str]:
    """(whether the value was quoted, the value without quotes or trailing punctuation)."""
    value = match.group("value").strip(EDGE)
    return bool(match.group("quote")) and bool(value), value


def _strong(value: str) -> bool:
    """Letters with digits or symbols (hyphens and apostrophes between letters aside): no
    English word looks like it."""
    value = JOINER.sub("", value)
    return any(c.isalpha() for c in value) and (
        any(c.isdigit() for c in value) or SYMBOL.search(value) is not None)


def _is_password(quoted: bool, value: str, ends: bool = True) -> bool:
    """``ends``: nothing but punctuation follows the value (a plain word after a colon is a
    value only then: "Password: Choose a strong one" is a heading)."""
    if len(value) < 3:
        return False
    if quoted or value.isdigit() or _strong(value):
        return True
    word = JOINER.sub("", value)
    if not word.isalpha() or not ends:
        return False
    if any(c.isupper() for c in word[1:]) and not word.isupper():
        return True
    word = word.lower()
    return (word not in STOP_WORDS and word not in DESCRIPTIONS
            and not word.endswith(DESCRIPTION_SUFFIXES))


def _ends(match: re.Match[str]) -> bool:
    """Whether the value closes its clause (end of text or line, or punctuation next)."""
    after = match.group("after").strip()
    return not after or not after[0].isalnum() or match.group("value")[-1] in ".,;!?"


def _is_code(value: str) -> bool:
    return value.isdigit() and 3 <= len(value) <= 8


def _is_token(value: str) -> bool:
    return len(value) >= 8 and any(c.isdigit() for c in value) and \
        any(c.isalpha() for c in value)


def _said(text: str, lower: str) -> Iterator[tuple[str, re.Match[str]]]:
    """(the credential word's group: password, code or token; what follows it)."""
    words = WORD.finditer(lower) if len(lower) == len(text) else WORD_ANY_CASE.finditer(text)
    for word in words:
        said = SAID.match(text, word.end())
        if said is not None and word.lastgroup is not None:
            yield word.lastgroup, said


def said_password(text: str) -> bool:
    """A password said in words: linked, set to, named first, unlinked and strong, or in a
    URL."""
    lower = text.lower()
    if "://" in lower and URL_CREDENTIALS.search(text):
        return True
    if "pass" not in lower and "pwd" not in lower:
        return False
    for group, match in _said(text, lower):
        if group == "password":
            colon = match.group("link").strip() in (":", "=", "=>", "->")
            if _is_password(*_value(match), ends=not colon or _ends(match)):
                return True
    if any(_is_password(*_value(m)) for m in SET_TO.finditer(text)):
        return True
    for match in VALUE_FIRST.finditer(text):
        before = text[max(0, match.start() - 65):match.start()].split()
        if before and _is_password(before[-1][0] in QUOTES, before[-1].strip(EDGE)):
            return True
    for match in UNLINKED.finditer(text):
        value = _value(match)[1]
        if len(value) >= 6 and _strong(value) and any(c.isdigit() for c in value):
            return True
    return False


def said_credential(text: str) -> bool:
    """A PIN, a door code, a key or a token said in words ("my pin is 4821")."""
    lower = text.lower()
    if not any(word in lower for word in CREDENTIAL_HINTS):
        return False
    for group, match in _said(text, lower):
        value = _value(match)[1]
        if group == "code" and _is_code(value.replace("-", "")):
            return True
        if group == "token" and _is_token(value):
            return True
    return False
