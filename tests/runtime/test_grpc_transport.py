"""The network transport: parties in separate processes over gRPC with mutual TLS on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grpc")

from mpdp.cli.party_cmd import to_jsonable
from mpdp.errors import AuthenticationError
from mpdp.protocols.catalog import PartySetup, build_role, load_input
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol
from mpdp.runtime.certs import PartyCredentials, generate_demo_certificates
from mpdp.runtime.grpc_transport import GrpcTransport

pytestmark = pytest.mark.net

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("alice", "bob", "carol")
ENV = {**os.environ, "GRPC_VERBOSITY": "ERROR", "PYTHONWARNINGS": "ignore"}


def free_addresses(names: tuple[str, ...] = NAMES) -> dict[str, str]:
    socks = []
    for _ in names:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return {n: f"127.0.0.1:{p}" for n, p in zip(names, ports, strict=True)}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("certs")
    generate_demo_certificates(directory, NAMES)
    return directory


def start_helpers(behaviour: str, certs: Path, *, cert_dirs: dict[str, Path] | None = None,
                  timeout: float = 20.0) -> dict[str, subprocess.Popen[str]]:
    addresses = json.dumps(free_addresses())
    return {
        n: subprocess.Popen(
            [sys.executable, "-m", "tests.runtime.net_helper", n, addresses, str((cert_dirs or {}).get(n, certs)),
             behaviour, str(timeout)],
            cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in NAMES
    }


def outcomes(procs: dict[str, subprocess.Popen[str]], limit: float = 300.0) -> dict[str, dict[str, object]]:
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=limit)
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        out[name] = json.loads(lines[-1]) if lines else {"exit": proc.returncode, "stderr": stderr[-2000:]}
    return out


@pytest.mark.parametrize("protocol", ["inner-product", "secure-sum"])
def test_cli_parties_in_three_processes_match_the_in_memory_run(protocol: str, certs: Path, tmp_path: Path) -> None:
    if protocol == "secure-sum":
        inputs = {n: {"synthetic": {"seed": 11, "shape": [257], "low": -(10**6), "high": 10**6}} for n in NAMES}
        params: dict[str, object] = {}
    else:  # alice and bob hold 300 x 3 and 300 x 2 matrices, carol deals; bob learns X^T Y
        inputs = {"alice": {"synthetic": {"seed": 5, "shape": [300, 3], "kind": "uniform"}},
                  "bob": {"synthetic": {"seed": 6, "shape": [300, 2], "kind": "uniform"}}}
        params = {"left": "alice", "right": "bob", "rows": 300, "left_cols": 3, "right_cols": 2, "dealer": "carol",
                  "reveal_to": "bob"}
    config = {"protocol": protocol, "parties": free_addresses(), "certs": str(certs), "inputs": inputs,
              "params": params, "seed": 99, "timeout": 30, "connect_timeout": 120}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(config))
    procs = {n: subprocess.Popen([sys.executable, "-m", "mpdp", "party", "--config", str(path), "--name", n,
                                  "--json"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for n in NAMES}
    reports = {}
    for n, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)  # only bounds a hang
        assert proc.returncode == 0, stderr
        reports[n] = json.loads(stdout)

    data = {n: load_input(inputs.get(n), n) for n in NAMES}
    roles = {n: build_role(protocol, PartySetup(n, NAMES, params, data[n])) for n in NAMES}
    memory = run_protocol(roles, rng=RandomSource.seeded(99))
    for n in NAMES:
        assert reports[n]["result"] == to_jsonable(memory.results[n])
        assert reports[n]["communication"] == memory.traffic[n].as_dict()
    if protocol == "secure-sum":
        assert reports["alice"]["result"] == sum(data.values()).tolist()
    else:
        exact = data["alice"].T @ data["bob"]
        assert np.max(np.abs(np.array(reports["bob"]["result"]["value"]) - exact)) < 1e-3


def test_a_party_that_dies_is_reported_by_name_quickly(certs: Path) -> None:
    results = outcomes(start_helpers("die", certs, timeout=60))
    # alice waits for carol and finds her dead; bob waits for alice, who aborts and says why. "died" is the
    # health probe's diagnosis (grpc_transport), so the death was detected rather than waited out.
    assert results["alice"]["error"] == "PartyUnavailableError", results
    assert "cannot reach carol" in results["alice"]["message"] and "died" in results["alice"]["message"]
    assert results["bob"]["error"] == "ProtocolAbortError" and "cannot reach carol" in results["bob"]["message"]


def test_a_party_that_fails_aborts_the_others_with_its_reason(certs: Path) -> None:
    results = outcomes(start_helpers("fail", certs, timeout=60))
    for n in ("alice", "bob"):
        assert results[n]["error"] == "ProtocolAbortError", results
        assert "diverged" in results[n]["message"]
    assert "carol aborted" in results["alice"]["message"]


def test_a_party_that_stalls_times_out_by_name(certs: Path) -> None:
    procs = start_helpers("stall", certs, timeout=3)
    try:
        results = outcomes({n: p for n, p in procs.items() if n != "carol"})
    finally:
        procs["carol"].send_signal(signal.SIGKILL)
        procs["carol"].communicate(timeout=10)
    assert results["alice"]["error"] == "PartyUnavailableError", results
    assert "received nothing from carol within 3 s" in results["alice"]["message"]
    assert results["bob"]["error"] in ("PartyUnavailableError", "ProtocolAbortError")


def test_certificates_from_another_ca_are_refused_naming_the_party(certs: Path, tmp_path: Path) -> None:
    generate_demo_certificates(tmp_path, NAMES, ca_name="an unrelated CA")
    results = outcomes(start_helpers("chain", certs, cert_dirs={"carol": tmp_path}))
    for n in ("alice", "bob"):
        assert results[n]["error"] == "AuthenticationError", results
        assert "with carol" in results[n]["message"]
    assert results["carol"]["error"] == "AuthenticationError"


def test_a_certificate_of_another_party_is_refused_before_connecting(certs: Path) -> None:
    wrong = PartyCredentials(ca=certs / "ca.pem", cert=certs / "bob.pem", key=certs / "bob.key")
    with pytest.raises(AuthenticationError, match=r"certificate of alice.*issued to 'bob'"):
        GrpcTransport("alice", free_addresses(), wrong)


def test_chunked_delivery_in_one_process(certs: Path) -> None:
    import threading

    from mpdp.runtime.network_party import run_network_party

    addresses = free_addresses(("alice", "bob"))
    payload = RandomSource.seeded(5).uint64(100_000)
    out: dict[str, object] = {}

    def go(name: str) -> None:
        transport = GrpcTransport(name, addresses, PartyCredentials.in_directory(certs, name), max_chunk=4096)

        def role(comm):  # type: ignore[no-untyped-def]
            return comm.exchange(comm.peers[0], payload, label="x")

        out[name] = run_network_party(transport, role, timeout=20)[0]

    before = {t.ident for t in threading.enumerate()}
    threads = [threading.Thread(target=go, args=(n,)) for n in addresses]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(np.array_equal(out[n], payload) for n in addresses)  # type: ignore[arg-type]
    # closed transports leave no server worker threads behind (they would be copied by a later fork)
    for _ in range(100):
        left = [t.name for t in threading.enumerate() if t.ident not in before and "ThreadPoolExecutor" in t.name]
        if not left:
            break
        time.sleep(0.05)
    assert not left


def test_replayed_frames_are_refused_and_frames_are_reordered(certs: Path) -> None:
    """A peer's frames are numbered: out-of-order frames are put back in order, a replayed one is refused."""
    import grpc

    addresses = free_addresses(("alice", "bob"))
    alice = GrpcTransport("alice", addresses, PartyCredentials.in_directory(certs, "alice"))
    try:
        ca, cert, key = PartyCredentials.in_directory(certs, "bob").read()
        creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
        with grpc.secure_channel(addresses["alice"], creds,
                                 options=[("grpc.ssl_target_name_override", "alice")]) as channel:
            deliver = channel.unary_unary("/mpdp.Transport/Deliver")

            def frame(number: int, payload: bytes) -> bytes:
                return bytes([2]) + number.to_bytes(8, "little") + payload

            deliver(frame(1, b"second"), timeout=5)
            deliver(frame(0, b"first"), timeout=5)
            endpoint = alice.endpoint("alice")
            assert endpoint.recv("bob", 5) == b"first" and endpoint.recv("bob", 5) == b"second"
            with pytest.raises(grpc.RpcError) as info:
                deliver(frame(0, b"first again"), timeout=5)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "replayed" in info.value.details()
    finally:
        alice.linger = 0.0
        alice.close()


def test_start_barrier_refuses_a_peer_that_skips_it(certs: Path) -> None:
    """The protocol clock starts after a barrier; a peer whose first message is something else is named."""
    import threading

    from mpdp.errors import MalformedMessageError
    from mpdp.runtime.network_party import start_barrier

    addresses = free_addresses(("alice", "bob"))
    alice = GrpcTransport("alice", addresses, PartyCredentials.in_directory(certs, "alice"), connect_timeout=120)
    bob = GrpcTransport("bob", addresses, PartyCredentials.in_directory(certs, "bob"), connect_timeout=120)
    try:
        ready = [threading.Thread(target=t.wait_ready) for t in (alice, bob)]
        for t in ready:
            t.start()
        for t in ready:
            t.join(30)
        bob.endpoint("bob").send("alice", b"not the barrier")
        with pytest.raises(MalformedMessageError, match="first message from bob"):
            start_barrier(alice)
    finally:
        for t in (alice, bob):
            t.linger = 0.0
            t.close()
