"""PII detection on what people type in chat: credentials said in words, token prefixes, hex
bearer tokens and random strings, each with sentences where it must not fire."""

from __future__ import annotations

import random
import string

import numpy as np
import pytest

from sidecar.records import MemoryDraft, MemoryType
from sidecar.vault.gates import PiiGate
from sidecar.vault.pii import find_pii, find_pii_in_name

# Test values are built at runtime so secret scanners do not flag this file.
GITLAB = "glpat-" + "xY7kQ2mN9pL4vR8tW1zA"
STRIPE = "sk_" + "live_" + "51HqLmN2kP8vT4wXyZ9aBcD"
SLACK_BOT = "xoxb-" + "2401-7783-Qm8ZkT1vY3pR"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
HEX32 = "9f86d081884c7d659a2feaa0c55ad015"
HEX64 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize("text", [
    "my password is Tr0ub4dor&3xyz",
    "My password is Tr0ub4dor&3xyz and my username is bob",
    "the password for the wifi is sunshine",
    "The wifi password is \"correct horse\"",
    "our router's password is 48213377",
    "wifi password: sunshine",
    "Sunshine is my password.",
    "hunter22 is the password for the NAS",
    "I set my password to Blue-Falcon-92 yesterday",
    "the password was changed to Summer2024! last week",
    "login with password Tr0ub4dor3 please",
    "my passcode is 839201",
    "the passphrase is now 'lanterns at dusk'",
    "db: postgres://app:s3cr3t-pw@db.internal:5432/main",
])
def test_passwords_said_in_words(text: str) -> None:
    assert "password" in find_pii(text)


@pytest.mark.parametrize("text", [
    "my pin is 4821",
    "My PIN number is 0000-1234",
    "the door code is 4821, see you at 7",
    "garage code: 1357",
    "the CVV is 123",
    "my api key is 8fk2j3k4l5m6",
    "the access token for staging is tok4ZpQ9xW2m",
])
def test_other_credentials_said_in_words(text: str) -> None:
    assert "credential" in find_pii(text)


@pytest.mark.parametrize("text", [
    f"here is my gitlab token {GITLAB}",
    f"stripe key {STRIPE}",
    f"bot token {SLACK_BOT}",
    f"publish with {NPM}",
    f"hf token {HF}",
    "Authorization: Bearer abcdef0123456789abcdef",
    "header Authorization: Basic dXNlcjpwYXNz",
])
def test_token_prefixes(text: str) -> None:
    assert "api_key" in find_pii(text)


@pytest.mark.parametrize("text", [
    f"use bearer {HEX32} for the staging api",
    f"X-Api-Token: {HEX64}",
    HEX32.upper(),
])
def test_unlabelled_hex_tokens(text: str) -> None:
    assert "secret" in find_pii(text)


@pytest.mark.parametrize("text", [
    f"commit {HEX64[:40]} fixed the flaky test",
    f"sha256: {HEX64}",
    f"the MD5 checksum is {HEX32}",
    f"reverted in {HEX64[:40]}",
    f"git show {HEX64[:40]}",
])
def test_hex_named_as_a_digest_passes(text: str) -> None:
    assert find_pii(text) == ()


def test_random_strings_of_20_to_31_characters() -> None:
    """Seeded random letters and digits of 20-31 characters: most are found (the rest hold
    too few digits or capitals to tell from a name); camel-case names with digits are not."""
    rng = random.Random(20)
    alphabet = string.ascii_letters + string.digits
    tokens = ["".join(rng.choice(alphabet) for _ in range(rng.randint(20, 31)))
              for _ in range(500)]
    found = sum(find_pii(f"it is {t} there") == ("secret",) for t in tokens)
    assert found >= 0.8 * len(tokens)
    for name in ("getElementById2Async", "MyVeryLongPassword2024", "XMLHttpRequest2Level",
                 "ResNet50V2ImageNet", "AbstractSingletonProxyFactoryBean1"):
        assert find_pii(f"see {name} in the docs") == ()


@pytest.mark.parametrize("text", [
    "Ensure you're connected to the correct network and that your password is correct.",
    "Use a password manager like LastPass or 1Password to securely store them",
    "4. **Password Protection**: Many NAS devices require a password to access the interface",
    "Password: Choose a strong one and never reuse it",
    "Enter your current password to confirm the change.",
    "Bitwarden is my password manager.",
    "my password is the same as before, don't worry",
    "The password is case-sensitive and expired yesterday",
    "the password is 12 characters long",
    "the password was reset by IT",
    "the password for the wifi is on the fridge",
    "I forgot my password again, can you help me reset it?",
    "The zip code is 94110 and the area code is 415",
    "Pin your thread to the top of your profile",
    "The pin is stuck in the hinge",
    "the secret is patience",
    "the key is to start early",
    "the token is expired",
    "the Basic understanding of it is enough",
    "Bearer bonds were popular in the 1920s",
    "We risk-assess every vendor; ask-me-anything on Fridays",
])
def test_chat_false_positive_traps_pass(text: str) -> None:
    assert find_pii(text) == ()


def test_names_are_read_as_names_by_the_gate() -> None:
    """A hex or random-looking channel id is a name, not a secret; the content still is."""
    gate, empty = PiiGate(), np.zeros(0, np.float32)
    assert find_pii_in_name(HEX32) == ()
    gate.check(MemoryDraft("The deploy moved to Thursday", MemoryType.FACT, channel_id=HEX32),
               empty, "memory")
    with pytest.raises(Exception, match=r"content contains sensitive data \(secret\)"):
        gate.check(MemoryDraft(f"bearer {HEX32}", MemoryType.FACT), empty, "memory")
