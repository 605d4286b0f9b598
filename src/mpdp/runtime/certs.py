"""Demo certificates for the network transport: one certificate authority, one certificate per party.

The gRPC transport (:mod:`mpdp.runtime.grpc_transport`) runs mutual TLS: every party presents a certificate
signed by the deployment's CA, and a party's identity *is* the name in its certificate. A party's
certificate carries the party name as its subject common name (how a server recognises who is sending) and
as a DNS subject-alternative name (how a client checks it reached the party it meant to reach, whatever
address it dialled).

:func:`generate_demo_certificates` writes such a set for a demo or a test on one machine. A real
deployment issues certificates from its own CA with the same two fields; nothing else in mpdp depends on
how they were made. Keys are ECDSA P-256; private keys are written unencrypted with mode 0600, which is
appropriate for a demo and nothing more.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mpdp.errors import ParameterError, explain

__all__ = ["PartyCredentials", "certificate_name", "check_party_name", "credentials_from_config",
           "generate_demo_certificates", "generate_party_folders"]

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def check_party_name(name: str) -> str:
    """A party name usable as a certificate's DNS name (letters, digits, inner hyphens; <= 63 chars)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ParameterError(
            explain("party name", name, "letters, digits and inner hyphens, at most 63 characters",
                    "rename the party, e.g. 'party0' or 'bank-a' (the name becomes a certificate DNS name)")
        )
    return name


def certificate_name(pem: bytes) -> str:
    """The subject common name of a PEM certificate (the party it identifies)."""
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise ParameterError(explain("certificate", pem[:40], "a PEM X.509 certificate",
                                     "pass the <party>.pem written by `mpdp certs`")) from exc
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    value = names[0].value if names else ""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


@dataclass(frozen=True)
class PartyCredentials:
    """Paths of the PEM files one party needs: the CA certificate, its own certificate and its key."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def in_directory(cls, directory: str | Path, party: str) -> PartyCredentials:
        """The files :func:`generate_demo_certificates` wrote for ``party`` in ``directory``."""
        root = Path(directory)
        return cls(ca=root / "ca.pem", cert=root / f"{party}.pem", key=root / f"{party}.key")

    def read(self) -> tuple[bytes, bytes, bytes]:
        """``(ca, cert, key)`` as PEM bytes."""
        try:
            return self.ca.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()
        except OSError as exc:
            raise ParameterError(explain("TLS credentials", str(exc), "readable ca.pem, <party>.pem, <party>.key",
                                         "generate them with `mpdp certs --out DIR --parties ...`")) from exc


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def generate_demo_certificates(
    directory: str | Path, parties: Iterable[str], *, days: int = 30, ca_name: str = "mpdp demo CA",
    addresses: Iterable[str] = (),
) -> dict[str, PartyCredentials]:
    """Create ``ca.pem`` and ``<party>.pem`` / ``<party>.key`` for every party in ``directory``.

    Parameters
    ----------
    directory:
        Created if missing; existing files of the same names are overwritten.
    parties:
        Party names (see :func:`check_party_name`).
    days:
        Validity of every certificate.
    ca_name:
        Common name of the CA. Two calls make two unrelated CAs: parties holding certificates from
        different calls cannot talk to each other (the transport reports an authentication error).
    addresses:
        IP addresses (e.g. ``"127.0.0.1"``) added to every certificate's subject alternative names, for
        clients that connect by address rather than by the party's DNS name.

    Returns
    -------
    dict
        Party name -> its :class:`PartyCredentials`.
    """
    names = [check_party_name(p) for p in parties]
    try:
        ips = [ipaddress.ip_address(a) for a in addresses]
    except ValueError as exc:
        raise ParameterError(explain("addresses", list(addresses), "IP addresses such as '127.0.0.1'",
                                     "pass IP addresses (DNS names are the party names)")) from exc
    if not names or len(set(names)) != len(names):
        raise ParameterError(explain("parties", names, "distinct party names", "list each party once"))
    if not isinstance(days, int) or days < 1:
        raise ParameterError(explain("days", days, "an int >= 1", "pass e.g. days=30"))
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = out / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_private(out / "ca.key", _key_pem(ca_key))

    credentials: dict[str, PartyCredentials] = {}
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name), *map(x509.IPAddress, ips)]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        cert_path, key_path = out / f"{name}.pem", out / f"{name}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_private(key_path, _key_pem(key))
        credentials[name] = PartyCredentials(ca=ca_path, cert=cert_path, key=key_path)
    return credentials


def generate_party_folders(
    directory: str | Path, parties: Iterable[str], *, days: int = 30, ca_name: str = "mpdp demo CA",
    ca_key_directory: str | Path | None = None,
) -> dict[str, PartyCredentials]:
    """Like :func:`generate_demo_certificates`, but each party's files in a folder of its own.

    ``directory/<party>/`` receives ``ca.pem``, ``<party>.pem`` and ``<party>.key``: what that organisation
    copies to its machine, and nothing of anyone else's. The CA's private key never sits beside a party's
    key: it is written to ``ca_key_directory`` (as ``ca.pem`` and ``ca.key``) when one is given, and otherwise
    not kept at all (no further certificate can then be issued from this CA).
    """
    import tempfile

    names = [check_party_name(p) for p in parties]
    out = Path(directory)
    with tempfile.TemporaryDirectory() as scratch:
        made = generate_demo_certificates(scratch, names, days=days, ca_name=ca_name)
        credentials: dict[str, PartyCredentials] = {}
        for name, creds in made.items():
            folder = out / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "ca.pem").write_bytes(creds.ca.read_bytes())
            (folder / f"{name}.pem").write_bytes(creds.cert.read_bytes())
            _write_private(folder / f"{name}.key", creds.key.read_bytes())
            credentials[name] = PartyCredentials.in_directory(folder, name)
        if ca_key_directory is not None:
            keep = Path(ca_key_directory)
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "ca.pem").write_bytes((Path(scratch) / "ca.pem").read_bytes())
            _write_private(keep / "ca.key", (Path(scratch) / "ca.key").read_bytes())
    return credentials


def credentials_from_config(config: Mapping[str, Any], name: str, base: Path) -> PartyCredentials:
    """Party ``name``'s TLS files named by a party configuration: ``"tls": {ca, cert, key}`` (or one such entry
    per party name), or ``"certs": DIR`` as ``mpdp certs`` writes it; relative paths are taken from ``base``."""
    if "tls" in config:
        tls = config["tls"]
        entry = tls.get(name, tls) if isinstance(tls, Mapping) else None
        if not isinstance(entry, Mapping) or not {"ca", "cert", "key"} <= set(entry):
            raise ParameterError(explain("tls", tls, "{ca, cert, key} paths", "or give \"certs\": DIR"))
        return PartyCredentials(*(base / Path(entry[k]) for k in ("ca", "cert", "key")))
    if "certs" in config:
        return PartyCredentials.in_directory(base / Path(config["certs"]), name)
    raise ParameterError(explain("configuration", "no \"certs\" or \"tls\"", "TLS credentials",
                                 "run `mpdp certs --out certs --parties ... --split` and add \"certs\": DIR"))
