"""The server certificate's checks before a bind (``sidecar.auth.certificate``): the validity
dates read from the DER equal the ``cryptography`` package's reading of the same certificate;
a key of another certificate, an expired and a not-yet-valid certificate are refused by
``read_tls`` with the file and the problem named, at the exact instants of the bounds."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from sidecar.auth.certificate import validity_of
from sidecar.auth.config import TlsConfig
from sidecar.auth.tls import read_tls
from tests.api.test_tls import Pki, _cert, _pem

SECOND = datetime.timedelta(seconds=1)


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


def test_the_dates_are_those_cryptography_reads(pki: Pki) -> None:
    for name in ("server.pem", "expired.pem", "future.pem", "ca.pem"):
        pem = (pki.root / name).read_bytes()
        reference = x509.load_pem_x509_certificate(pem)
        read = validity_of(pem)
        assert (read.not_before, read.not_after) == (reference.not_valid_before_utc,
                                                     reference.not_valid_after_utc), name


def test_dates_past_2049_and_a_chain_read_its_first_certificate(tmp_path: Path) -> None:
    """notAfter from 2050 is a GeneralizedTime (RFC 5280); a chain file lists the server's
    own certificate first."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    far = _cert("localhost", key, "localhost", key, False,
                (-SECOND, datetime.datetime(2051, 3, 4, 5, 6, 7, tzinfo=datetime.UTC) - now))
    other = _cert("ca", key, "ca", key, True)
    read = validity_of(_pem(far) + _pem(other))
    assert (read.not_before, read.not_after) == (far.not_valid_before_utc,
                                                 far.not_valid_after_utc)
    assert read.not_after.year == 2051


def test_not_a_certificate_is_a_value_error() -> None:
    for pem in (b"", b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----",
                b"-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----"):
        with pytest.raises(ValueError):
            validity_of(pem)


def tls(pki: Pki, cert: str, key: str = "server.key") -> TlsConfig:
    return TlsConfig(cert=str(pki.root / cert), key=str(pki.root / key))


def test_a_key_of_no_certificate_is_named(pki: Pki) -> None:
    with pytest.raises(OSError) as refused:
        read_tls(tls(pki, "server.pem", "other.key"))
    assert str(refused.value) == (
        f"[server.tls] key: {pki.root / 'other.key'} is not the private key of the certificate"
        f" in {pki.root / 'server.pem'} (cert); give the key it was issued for")


def test_the_certificate_is_valid_from_its_first_to_its_last_second(pki: Pki) -> None:
    config = tls(pki, "server.pem")
    bounds = validity_of((pki.root / "server.pem").read_bytes())
    for now in (bounds.not_before, bounds.not_after):
        assert read_tls(config, now).validity == bounds
    with pytest.raises(OSError, match=r"server\.pem is not valid before \d{4}-"):
        read_tls(config, bounds.not_before - SECOND)
    with pytest.raises(OSError, match=r"server\.pem expired on \d{4}-.*; renew it"):
        read_tls(config, bounds.not_after + SECOND)


def test_expired_and_future_certificates_are_refused_now(pki: Pki) -> None:
    with pytest.raises(OSError, match="expired on"):
        read_tls(tls(pki, "expired.pem"))
    with pytest.raises(OSError, match="is not valid before"):
        read_tls(tls(pki, "future.pem"))
    assert read_tls(tls(pki, "server.pem")).client_ca is None
