"""The network transport names what happened at a peer's address: unresponsive (frozen, silent),
a protocol violation (bytes that are not mpdp's TLS service), or an authentication failure; and a peer that was
listening and died is not reported as one that never came up.

Each case waits for a readiness signal (a line the peer prints once it listens, a port that accepts) and only
bounds the failure with a deadline; the timeouts under test are short because the outcome does not depend on
how fast the machine is (a frozen peer stays frozen).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("grpc")

from mpdp.errors import AuthenticationError, MalformedMessageError, PartyUnavailableError
from mpdp.runtime.certs import PartyCredentials, generate_demo_certificates
from mpdp.runtime.grpc_transport import GrpcTransport

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), GRPC_VERBOSITY="ERROR")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("certs")
    generate_demo_certificates(directory, ["a", "b"])
    generate_demo_certificates(directory / "other", ["a", "b"], ca_name="another CA")
    return directory


def _addresses(names: tuple[str, ...] = ("a", "b")) -> dict[str, str]:
    socks = [socket.socket() for _ in names]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return {n: f"127.0.0.1:{p}" for n, p in zip(names, ports, strict=True)}


@pytest.fixture
def fake_b() -> Iterator[tuple[dict[str, str], socket.socket]]:
    """A plain TCP listener at b's address (what it answers is up to the test)."""
    addresses = _addresses()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(addresses["b"].rsplit(":", 1)[1])))
    server.listen(16)
    yield addresses, server
    server.close()


def _serve(server: socket.socket, answer: bytes | None) -> None:
    def loop() -> None:
        held = []
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if answer is not None:
                conn.sendall(answer)
            held.append(conn)  # kept open: a silent peer never closes

    threading.Thread(target=loop, daemon=True).start()


def test_a_silent_socket_is_unresponsive_not_an_authentication_failure(
        certs: Path, fake_b: tuple[dict[str, str], socket.socket]) -> None:
    addresses, server = fake_b
    _serve(server, None)
    with GrpcTransport("a", addresses, PartyCredentials.in_directory(certs, "a"), connect_timeout=3) as a, \
            pytest.raises(PartyUnavailableError, match=r"\bb at .* accepts connections but does not answer"):
        a.wait_ready()


def test_a_socket_sending_random_bytes_is_a_protocol_violation(
        certs: Path, fake_b: tuple[dict[str, str], socket.socket]) -> None:
    addresses, server = fake_b
    _serve(server, os.urandom(4096))
    with GrpcTransport("a", addresses, PartyCredentials.in_directory(certs, "a"), connect_timeout=30) as a, \
            pytest.raises(MalformedMessageError, match="b's address"):
        a.wait_ready()


def _peer_b(certs: Path, addresses: dict[str, str]) -> subprocess.Popen[str]:
    """b's transport in its own process; it prints "listening" once it serves."""
    code = f"""
import sys, time
from mpdp.runtime.certs import PartyCredentials
from mpdp.runtime.grpc_transport import GrpcTransport
t = GrpcTransport("b", {addresses!r}, PartyCredentials.in_directory({str(certs)!r}, "b"), connect_timeout=60)
print("listening", flush=True)
time.sleep(120)
"""
    proc = subprocess.Popen([sys.executable, "-c", code], env=ENV, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    return proc


@pytest.mark.parametrize("fault", ["kill", "stop"])
def test_a_peer_killed_or_frozen_after_it_answered_is_named_for_what_happened(certs: Path, fault: str) -> None:
    addresses = _addresses()
    b = _peer_b(certs, addresses)
    try:
        with GrpcTransport("a", addresses, PartyCredentials.in_directory(certs, "a"), connect_timeout=60) as a:
            a.wait_ready()  # b answered: it had come up
            b.send_signal(signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
            expected = "was listening and stopped answering" if fault == "kill" else \
                "accepts connections but does not answer"
            with pytest.raises(PartyUnavailableError, match=expected) as caught:
                a.endpoint("a").recv("b", 4.0)
            assert "never came up" not in str(caught.value)
    finally:
        b.send_signal(signal.SIGKILL)
        b.wait()


def test_a_peer_frozen_before_it_answered_is_unresponsive(certs: Path) -> None:
    addresses = _addresses()
    b = _peer_b(certs, addresses)
    b.send_signal(signal.SIGSTOP)
    try:
        with GrpcTransport("a", addresses, PartyCredentials.in_directory(certs, "a"), connect_timeout=3) as a, \
                pytest.raises(PartyUnavailableError, match="accepts connections but does not answer"):
            a.wait_ready()
    finally:
        b.send_signal(signal.SIGKILL)
        b.wait()


def test_a_certificate_of_another_ca_is_an_authentication_failure(certs: Path) -> None:
    addresses = _addresses()
    b = _peer_b(certs / "other", addresses)
    try:
        with GrpcTransport("a", addresses, PartyCredentials.in_directory(certs, "a"), connect_timeout=60) as a, \
                pytest.raises(AuthenticationError, match="could not authenticate with b"):
            a.wait_ready()
    finally:
        b.send_signal(signal.SIGKILL)
        b.wait()


def test_a_peer_that_never_came_up_is_named_with_every_other_missing_one(certs: Path) -> None:
    generate_demo_certificates(certs / "three", ["a", "b", "c"])
    addresses = _addresses(("a", "b", "c"))
    with GrpcTransport("a", addresses, PartyCredentials.in_directory(certs / "three", "a"), connect_timeout=1) as a, \
            pytest.raises(PartyUnavailableError, match=r"from b at .* never came up.*; c at .* never came up"):
        a.wait_ready()
