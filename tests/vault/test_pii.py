"""PII detection: every kind with real positives and the false-positive traps."""

from __future__ import annotations

import pytest

from sidecar.vault.pii import find_pii, luhn_valid, shannon_entropy

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
