"""The base package works without grpcio; the ``certs`` command writes a usable CA and party certificates."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from cryptography import x509

from mpdp.cli import main
from mpdp.runtime.certs import certificate_name

BLOCK_GRPC = (
    "import sys; sys.modules['grpc'] = None\n"
    "import mpdp, mpdp.runtime, mpdp.protocols.catalog, mpdp.cli\n"
    "sys.exit(mpdp.cli.main(['party', '--config', 'missing.json']))\n"
)


def test_base_package_imports_without_grpc_and_party_says_what_to_install() -> None:
    result = subprocess.run([sys.executable, "-c", BLOCK_GRPC], capture_output=True, text=True, check=False)
    assert result.returncode == 2, result.stderr
    assert "grpcio" in result.stderr and "mpdp[net]" in result.stderr


def test_certs_command_writes_ca_and_named_party_certificates(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["certs", "--out", str(tmp_path), "--parties", "alice", "bob", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["parties"]) == {"alice", "bob"}
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.pem").read_bytes())
    for name in ("alice", "bob"):
        pem = (tmp_path / f"{name}.pem").read_bytes()
        assert certificate_name(pem) == name
        cert = x509.load_pem_x509_certificate(pem)
        cert.verify_directly_issued_by(ca)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == [name]
        assert stat.S_IMODE((tmp_path / f"{name}.key").stat().st_mode) == 0o600


def test_certs_command_refuses_names_that_cannot_be_dns_names(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["certs", "--out", str(tmp_path), "--parties", "alice", "bob smith"]) == 2
    assert "party name: received 'bob smith'" in capsys.readouterr().err
