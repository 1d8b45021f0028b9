"""PII detection: every kind with real positives and the false-positive traps."""

from __future__ import annotations

import pytest

from sidecar.vault.pii import find_pii, find_pii_in_name, luhn_valid, shannon_entropy

# Test values are built at runtime so secret scanners do not flag this file.
JWT = ("eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
OPENAI = "sk-" + "proj-" + "Zx81kLmQ0pR7vT2yW9aB4cD6eF"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
RANDOM_SECRET = "q8Zr2LmX0vTn4Kp7Wy1Bc9Hd3Fg6Js5A"


@pytest.mark.parametrize("text,kind", [
    ("Her SSN is 219-09-9999.", "ssn"),
    ("ssn 219 09 9999 on file", "ssn"),
    ("Card: 4111 1111 1111 1111 exp 12/29", "payment_card"),
    ("paid with 5555-5555-5555-4444", "payment_card"),
    ("amex 378282246310005", "payment_card"),
    ("card 4111.1111.1111.1111", "payment_card"),
    ("4111\u200b1111\u200b1111\u200b1111", "payment_card"),
    ("4111 -1111. 1111\u2060-1111", "payment_card"),
    ("billing:4111111111111111", "payment_card"),
    ("card4111111111111111", "payment_card"),
    ("ref x-4111-1111-1111-1111", "payment_card"),
    (f"key {OPENAI[:8]}\u200b{OPENAI[8:]}", "api_key"),
    ("db password: hunter2!", "password"),
    ("connect with pwd=Tr0ub4dor&3", "password"),
    ("PASSWORD = correct-horse", "password"),
    (f"use {OPENAI} for the bot", "api_key"),
    (f"token {GITHUB}", "api_key"),
    (f"aws key {AWS} in us-east-1", "api_key"),
    (f"Authorization: Bearer {JWT}", "jwt"),
    (f"the signing secret is {RANDOM_SECRET}", "secret"),
])
def test_detects(text: str, kind: str) -> None:
    assert kind in find_pii(text)


CARD = "4111 1111 1111 1111"


def _digits(text: str, zero: int) -> str:
    """``text`` with its ASCII digits written in the script whose zero is ``zero``."""
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in text)


@pytest.mark.parametrize("text,kind", [
    (_digits(CARD, 0xFF10), "payment_card"),  # fullwidth
    (_digits(CARD, 0x1D7CE), "payment_card"),  # mathematical bold
    (_digits(CARD, 0x0660), "payment_card"),  # Arabic-Indic
    (_digits(CARD, 0x06F0), "payment_card"),  # extended Arabic-Indic (Persian)
    (_digits(CARD, 0x0966), "payment_card"),  # Devanagari
    (_digits("4111111111111111", 0x1D7F6), "payment_card"),  # mathematical monospace
    (CARD.replace(" ", "\u00a0"), "payment_card"),  # no-break space
    (CARD.replace(" ", "\u2009"), "payment_card"),  # thin space
    (CARD.replace(" ", "\u202f"), "payment_card"),  # narrow no-break space
    (CARD.replace(" ", "\u3000"), "payment_card"),  # ideographic space
    (CARD.replace(" ", "\u2013"), "payment_card"),  # en dash
    (CARD.replace(" ", "\u2014\u2014"), "payment_card"),  # em dashes
    (CARD.replace(" ", "/"), "payment_card"),
    (CARD.replace(" ", "_"), "payment_card"),
    (CARD.replace(" ", "     "), "payment_card"),
    (CARD.replace(" ", "\n"), "payment_card"),
    (CARD.replace(" ", " / "), "payment_card"),
    ("card (4111) 1111-1111·1111", "payment_card"),
    (_digits(CARD, 0xFF10).replace(" ", "\u2013"), "payment_card"),
    ("SSN 123\u201345\u20136789", "ssn"),  # en dashes
    ("SSN 123.45.6789", "ssn"),
    ("SSN 123/45/6789", "ssn"),
    ("SSN 123\u00a045\u00a06789", "ssn"),
    ("SSN " + _digits("123-45-6789", 0xFF10), "ssn"),
    ("SSN " + _digits("123 45 6789", 0x0660), "ssn"),
    ("ｐａｓｓｗｏｒｄ: hunter2!", "password"),  # fullwidth letters fold too
])
def test_detects_other_scripts_and_separators(text: str, kind: str) -> None:
    assert kind in find_pii(text)


@pytest.mark.parametrize("text", [
    "Released 2024-01-15, version 1.2.3.4",
    "Call +1 (415) 555-2671 or 415.555.2671",
    "Call +44 20 7946 0958 or +49 (0) 30 1234 5678 90",  # 14 digits, not Luhn-valid
    "On 15/01/2024 at 10:30, again on 2024\u201301\u201316",
    "values 100, 20, 3000 and 200; 30; 4000",  # list separators are no SSN's
    "build 10.0.19041.1415 of ISBN 978-3-16-148410-0",
    "pi is 3.14159265358979",
    "order 4111 1111 1111 1112",  # Visa prefix, fails Luhn
    "order " + _digits("4111 1111 1111 1112", 0xFF10),
    "ip 192.168.100.200:8080",
    "Tel. \u0660\u0661\u0662\u0663 \u0664\u0665\u0666 \u0667\u0668\u0669",
    "timestamps 1700000000123 and 1700000000456",  # 13 digits, prefix 1
])
def test_other_scripts_and_separators_false_positive_traps_pass(text: str) -> None:
    assert find_pii(text) == ()


@pytest.mark.parametrize("text", [
    "Order 1234567812345678 shipped on Monday",  # 16 digits, fails Luhn
    "Invoice 4111111111111112 is overdue",  # Visa prefix but fails Luhn
    "Ticket 9999999999999995 closed",  # Luhn-valid but no card network prefix
    "The password policy requires 12 characters and a symbol",
    "Reset your password before Friday (password reset link expires)",
    "password: ok",  # a value this short is not a credential
    "We moved to a task-based workflow; ask-me-anything sessions on Fridays",
    "The risk-assessment and disk-usage reports are ready",
    "Call me at 555-123-4567 tomorrow",  # phone number, not an SSN
    "Build 000-12-3456 is invalid anyway",  # SSN area 000 is never issued
    "Commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",  # hex digest, not a secret
    "Memory id 123e4567-e89b-12d3-a456-426614174000 was merged",  # UUID
    "See https://example.com/docs/getting-started/installation-guide",
    "AKIA is how the AWS docs spell access key prefixes",
])
def test_false_positive_traps_pass(text: str) -> None:
    assert find_pii(text) == ()


def test_api_key_is_not_also_reported_as_generic_secret() -> None:
    assert find_pii(f"key {GITHUB}") == ("api_key",)
    assert find_pii(f"jwt {JWT}") == ("jwt",)


def test_luhn_and_entropy_references() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112") and not luhn_valid("1234567812345678")
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


def test_names_are_checked_for_everything_but_random_looking_ids() -> None:
    assert find_pii_in_name("user 123-45-6789") == ("ssn",)
    assert find_pii_in_name(_digits("4111111111111111", 0xFF10)) == ("payment_card",)
    assert find_pii_in_name(GITHUB) == ("api_key",)
    assert find_pii(RANDOM_SECRET) == ("secret",) and find_pii_in_name(RANDOM_SECRET) == ()



@pytest.mark.parametrize("unlucky", [
    "41111111-1111-1111-a111-111111111111",  # a UUID
    "3f786850e387550fdab836ed7e6d4111111111111111",  # a SHA-1-like digest
    "a" * 20 + "4111111111111111" + "b" * 28,  # a SHA-256-like digest
])
def test_identifiers_are_not_numbers(unlucky: str) -> None:
    """A UUID's or a hex digest's digits are no number, even when they make a Luhn-valid card
    with a network prefix (as about one random UUID or digest in 1,000 does)."""
    for text in (unlucky, f"chat-{unlucky}", f"git:{unlucky} merged", unlucky.upper()):
        assert not {"ssn", "payment_card"} & set(find_pii(text))
        assert find_pii_in_name(text) == ()
    assert "ssn" in find_pii(f"{unlucky} 123-45-6789")


def test_identifier_shapes_do_not_hide_ordinary_numbers() -> None:
    assert find_pii("41111111-1111-1111-a111") == ("payment_card",)  # no UUID
    assert find_pii("ref cafe4111111111111111") == ("payment_card",)  # 20 hex: no digest
    assert find_pii("card4111111111111111") == ("payment_card",)
