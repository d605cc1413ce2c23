"""Test certificates made at test time with the ``cryptography`` package (no private key is ever checked in).

``Pki(tmp_path)`` makes a CA; ``pki.issue(name, ...)`` writes ``<name>.pem`` (PKCS#8 key then the chain, the
layout of Kafka's ``ssl.keystore.type=PEM`` location files) and returns its path (also ``<name>.key`` and ``<name>.crt`` apart, for clients that want them so); ``pki.ca_pem`` is the CA
certificate file (a PEM truststore).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Pki:
    def __init__(self, root: Path, name: str = "kraftd-test-ca") -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
            .sign(self.key, hashes.SHA256())
        )
        self.ca_pem = root / f"{name}.ca.pem"
        self.ca_pem.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        cn: str,
        *,
        hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
        expired: bool = False,
        password: bytes | None = None,
    ) -> Path:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        start, end = (
            (now - dt.timedelta(days=10), now - dt.timedelta(days=1))
            if expired
            else (
                now - dt.timedelta(hours=1),
                now + dt.timedelta(days=7),
            )
        )
        sans: list[x509.GeneralName] = []
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                sans.append(x509.DNSName(h))
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        enc = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        path = self.root / f"{cn}.pem"
        path.write_bytes(key_pem + cert_pem)
        (self.root / f"{cn}.key").write_bytes(key_pem)
        (self.root / f"{cn}.crt").write_bytes(cert_pem)
        for p in (path, self.root / f"{cn}.key"):
            p.chmod(0o600)
        return path

    @staticmethod
    def split(path: Path) -> tuple[str, str]:
        """(key PEM, certificate chain PEM) of an issued file, for the inline ssl.keystore.* keys."""
        text = path.read_text()
        cut = text.index("-----BEGIN CERTIFICATE-----")
        return text[:cut], text[cut:]
