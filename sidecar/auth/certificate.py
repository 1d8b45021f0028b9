"""What the server's certificate must be before ``serve`` binds: the key's own certificate,
and valid now. gRPC accepts a key of another certificate only to fail the bind, and serves an
expired or not-yet-valid certificate that every client then refuses in its handshake.

The pair is checked by OpenSSL (Python's ``ssl``); the validity dates are read from the
first certificate of the file (the server's own: a chain lists it first) by a small reader of
the DER encoding (RFC 5280: Certificate -> TBSCertificate -> Validity).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
import ssl
from dataclasses import dataclass

_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.DOTALL)
_SEQUENCE, _VERSION, _UTC_TIME, _GENERALIZED_TIME = 0x30, 0xA0, 0x17, 0x18


@dataclass(frozen=True, slots=True)
class Validity:
    not_before: datetime.datetime  # UTC
    not_after: datetime.datetime  # UTC


def check_pair(cert_path: str, key_path: str) -> None:
    """OSError naming the file and the problem when ``key_path`` is not the private key of
    the certificate in ``cert_path`` (or either cannot be used)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        # An encrypted key gets an empty password (gRPC takes no password): never a prompt.
        context.load_cert_chain(cert_path, key_path, password=lambda: b"")
    except ssl.SSLError as err:
        if err.reason == "KEY_VALUES_MISMATCH":
            raise OSError(f"[server.tls] key: {key_path} is not the private key of the "
                          f"certificate in {cert_path} (cert); give the key it was issued "
                          "for") from None
        raise OSError(f"[server.tls] cert {cert_path} and key {key_path} cannot be loaded "
                      f"({err.reason or err}): a PEM certificate and its unencrypted PEM "
                      "private key are needed") from None


def check_validity(cert_path: str, pem: bytes, now: datetime.datetime) -> Validity:
    """The validity of the first certificate in ``pem``; OSError naming ``cert_path`` when
    ``now`` is outside it."""
    validity = validity_of(pem)
    if now < validity.not_before:
        raise OSError(f"[server.tls] cert: {cert_path} is not valid before "
                      f"{_when(validity.not_before)}: clients would refuse it until then; use "
                      "a certificate valid now (or check this machine's clock)")
    if now > validity.not_after:
        raise OSError(f"[server.tls] cert: {cert_path} expired on {_when(validity.not_after)}"
                      ": clients would refuse it; renew it (or check this machine's clock)")
    return validity


def validity_of(pem: bytes) -> Validity:
    """notBefore and notAfter of the first PEM certificate in ``pem``; ValueError when there
    is none or it is not a DER certificate."""
    found = _PEM_CERT.search(pem)
    if found is None:
        raise ValueError("no PEM certificate")
    try:
        der = base64.b64decode(b"".join(found.group(1).split()), validate=True)
    except binascii.Error as err:
        raise ValueError("the PEM certificate is not base64") from err
    certificate = _content(der, 0, _SEQUENCE)
    tbs = _content(der, certificate[0], _SEQUENCE)
    at = tbs[0]
    if der[at] == _VERSION:
        at = _element(der, at)[2]
    for _ in range(3):  # serialNumber, signature, issuer
        at = _element(der, at)[2]
    start, _end = _content(der, at, _SEQUENCE)
    not_before, after = _time(der, start)
    not_after, _ = _time(der, after)
    return Validity(not_before, not_after)


def _when(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _element(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of the content, end of the element) of the DER element at ``at``."""
    if at + 2 > len(der):
        raise ValueError("truncated DER")
    tag, length, start = der[at], der[at + 1], at + 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4 or start + size > len(der):
            raise ValueError("unsupported DER length")
        length, start = int.from_bytes(der[start:start + size], "big"), start + size
    if start + length > len(der):
        raise ValueError("truncated DER")
    return tag, start, start + length


def _content(der: bytes, at: int, tag: int) -> tuple[int, int]:
    found, start, end = _element(der, at)
    if found != tag:
        raise ValueError(f"expected DER tag {tag:#x} at {at}, found {found:#x}")
    return start, end


def _time(der: bytes, at: int) -> tuple[datetime.datetime, int]:
    """A UTCTime or GeneralizedTime (RFC 5280 4.1.2.5: UTC, seconds, "Z") and the end of it."""
    tag, start, end = _element(der, at)
    text = der[start:end].decode("ascii")
    if tag == _UTC_TIME:  # YYMMDDHHMMSSZ: 50..99 are 19xx
        year = int(text[:2])
        text = f"{1900 + year if year >= 50 else 2000 + year}{text[2:]}"
    elif tag != _GENERALIZED_TIME:
        raise ValueError(f"expected a DER time at {at}, found tag {tag:#x}")
    moment = datetime.datetime.strptime(text, "%Y%m%d%H%M%SZ")
    return moment.replace(tzinfo=datetime.UTC), end
