"""``mpdp launch``: every party its own process over gRPC/mTLS, reporting what ``mpdp run`` reports.

Each launch starts one Python process per party on 127.0.0.1 (a few seconds on a 2-core host), so the data
are tiny: one equality test per registered algorithm, the JSON fields, and the faults.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("grpc")

from mpdp.cli import main
from mpdp.cli.run_cmd import build_config
from mpdp.deploy.launcher import _python_command, launch, prepare_folders
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import (
    AuthenticationError,
    BudgetExceededError,
    ConfigMismatchError,
    MpdpError,
    ShapeMismatchError,
)
from mpdp.learning.registry import get_algorithm
from mpdp.runtime.certs import generate_party_folders
from tests.run_cases import CASES, DATA, SAME

pytestmark = pytest.mark.net



def cli_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main(argv) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_every_registered_algorithm_is_launched() -> None:
    from mpdp.learning.registry import algorithms

    assert set(CASES) == set(algorithms())


@pytest.mark.parametrize(("algorithm", "extra"), list(CASES.items()))
def test_launch_equals_run_bit_for_bit(capsys: pytest.CaptureFixture[str], algorithm: str, extra: list[str]) -> None:
    argv = [algorithm, *DATA, *extra, "--json"]
    memory = cli_json(capsys, ["run", *argv])
    launched = cli_json(capsys, ["launch", *argv, "--timeout", "60", "--network", "wan"])
    for key in SAME:
        assert launched[key] == memory[key], key
    dep = launched["deployment"]
    assert dep["transport"] == "grpc-mtls" and dep["processes"] == len(dep["per_party"])
    sent = sum(p["bytes_sent"] for p in dep["per_party"].values())
    assert sent == memory["communication"]["bytes"]
    assert sum(p["messages"] for p in dep["per_party"].values()) == memory["communication"]["messages"]
    holders = [p for p in dep["per_party"].values() if p["ledger"] is not None]
    # each data party's own ledger: its own guarantee (FM's eps^(k), DPVI's towards the parties, a size class's)
    own = set(memory["per_party_epsilon"].values())
    assert holders and all(p["ledger"]["epsilon"] in own or p["ledger"]["epsilon"] == memory["epsilon_spent"]
                           for p in holders), (own, holders)
    assert all(p["cpu_seconds"] > 0 for p in dep["per_party"].values())
    net = launched["network"]  # the WAN model over the measured run
    busiest = max(p["bytes_sent"] for p in dep["per_party"].values())
    assert net["latency_seconds"] == pytest.approx(memory["communication"]["rounds"] * 0.05)
    assert net["transfer_seconds"] == pytest.approx(busiest * 8 / 100e6)


def _config(algorithm: str, argv: list[str]) -> Any:
    from mpdp.cli import build_parser

    args = build_parser().parse_args(["run", algorithm, *DATA, *argv])
    return build_config(get_algorithm(algorithm), args)


def _launch(algorithm: str, overrides: dict[str, dict[str, Any]], *, argv: list[str] | None = None,
            timeout: float = 20.0) -> float:
    start = time.monotonic()
    launch(algorithm, _config(algorithm, argv or []), seed=5, timeout=timeout, connect_timeout=60.0,
           overrides=overrides)
    return time.monotonic() - start


def test_a_party_with_a_different_configuration_is_named(tmp_path: Path) -> None:
    # each side sees the other disagree: whichever party reports first, party1 and the key are named
    with pytest.raises(ConfigMismatchError, match=r"(party1's configuration disagrees with \w+'s|\w+'s "
                                                  r"configuration disagrees with party1's) on \['seed'\]"):
        _launch("fm-logistic", {"party1": {"seed": 6}})


def test_a_certificate_from_another_ca_is_refused(tmp_path: Path) -> None:
    generate_party_folders(tmp_path, ["party1"], ca_name="an unrelated CA")
    with pytest.raises(AuthenticationError, match="party1"):
        _launch("fm-logistic", {"party1": {"certs": str(tmp_path / "party1")}})


def test_an_overspending_party_refuses_before_sending_and_the_others_end(tmp_path: Path) -> None:
    ledger = tmp_path / "party0.json"
    with pytest.raises(BudgetExceededError, match="party0"):
        _launch("fm-logistic", {"party0": {"ledger": {"path": str(ledger), "epsilon": 0.1}}})
    assert PrivacyLedger.open(ledger).spent.epsilon == 0.0  # nothing recorded, nothing released


def test_a_data_file_with_other_columns_is_refused_naming_the_party(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("x:a,x:b\n0.1,0.2\n")
    with pytest.raises(ShapeMismatchError, match=r"party1.*columns"):
        _launch("fm-logistic", {"party1": {"data": str(bad)}})


def _start(folder: Path, names: list[str]) -> dict[str, subprocess.Popen[bytes]]:
    return {n: subprocess.Popen([*_python_command(), "party", "--config", str(folder / n / "config.json"),
                                 "--name", n], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for n in names}


def _charged(folder: Path, run: str) -> bool:
    """Whether the party's ledger holds its charge for ``run``: reserved once its handshake with every peer is
    complete, before its first protocol message (:mod:`mpdp.deploy.charge`)."""
    path = folder / "ledger.json"
    try:
        return path.exists() and PrivacyLedger.open(path).charge_of(run) is not None
    except MpdpError:  # written at this moment: read it again
        return False


@pytest.mark.parametrize("fault", ["kill", "stall"])
def test_a_killed_or_stalled_party_ends_the_others_by_name(tmp_path: Path, fault: str) -> None:
    from mpdp.deploy.deployments import deployment_for

    algorithm = "mpc-gradp"
    config = _config(algorithm, ["--option", "T=3000", "--option", "cohort=1", "--parties", "2"])
    plan = deployment_for(algorithm).plan(algorithm, config)
    # a stalled party is found by a receive's timeout (8 s); the start-up wait only bounds a failure
    folders = prepare_folders(tmp_path, algorithm, plan, epsilon=1.0, delta=1e-5, seed=5, timeout=8.0,
                              connect_timeout=300.0)
    run = json.loads(folders["party0"].config.read_text())["run"]
    procs = _start(tmp_path, list(plan.parties))
    victim = procs["agg1"]
    try:
        # ready: both data parties hold their charge, so every party has come up and the training has begun
        deadline = time.monotonic() + 300  # only bounds a failure
        while not all(_charged(tmp_path / f"party{j}", run) for j in range(2)):
            assert time.monotonic() < deadline, "the parties did not start"
            assert all(p.poll() is None for p in procs.values()), "a party ended before the test's fault"
            time.sleep(0.1)
        assert victim.poll() is None
        victim.send_signal(signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
        start = time.monotonic()
        errors = {}
        for name, proc in procs.items():
            if proc is victim:
                continue
            _, err = proc.communicate(timeout=300)  # only bounds a hang
            errors[name] = (proc.returncode, err.decode())
        took = time.monotonic() - start
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.communicate()
    assert all(code == 2 for code, _ in errors.values()), errors
    assert any("agg1" in err and ("PartyUnavailableError" in err or "ProtocolAbortError" in err)
               for _, err in errors.values()), errors
    assert took < 120, took  # ended by the fault's detection (seconds), far below the 300 s start-up bound


def test_every_registered_algorithm_is_deployable(capsys: pytest.CaptureFixture[str]) -> None:
    from mpdp.learning.registry import algorithms

    assert main(["launch", "--list", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["deployable"]) == set(algorithms())


def test_agents_scored_on_other_held_out_records_are_refused_naming_the_agent(tmp_path: Path) -> None:
    other = tmp_path / "evaluation.csv"
    config = _config("np-agt", ["--parties", "2"])
    from mpdp.datasets.holdings import write_party_data
    from mpdp.deploy.deployments import deployment_for

    held = deployment_for("np-agt").plan("np-agt", config).evaluation["agent1"]
    write_party_data(other, dataclasses.replace(held, y=1.0 - held.y))  # same shape, other labels
    with pytest.raises(ConfigMismatchError, match=r"agent1.*held-out records"):
        _launch("np-agt", {"agent1": {"evaluation": str(other)}}, argv=["--parties", "2"])


@pytest.mark.filterwarnings("ignore::mpdp.errors.PrivacyLeakWarning")
def test_a_party_name_not_in_the_config_or_a_busy_port_is_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from mpdp.deploy.deployments import deployment_for

    config = _config("fm-logistic", [])
    plan = deployment_for("fm-logistic").plan("fm-logistic", config)
    folders = prepare_folders(tmp_path, "fm-logistic", plan, epsilon=1.0, delta=0.0, seed=5, timeout=5.0,
                              connect_timeout=5.0)
    cfg = str(folders["party0"].config)
    assert main(["party", "--config", cfg, "--name", "party9"]) == 2
    assert "party9" in capsys.readouterr().err
    address = json.loads(folders["party0"].config.read_text())["parties"]["party0"]
    host, port = address.rsplit(":", 1)
    with socket.socket() as busy:
        busy.bind((host, int(port)))
        busy.listen()
        assert main(["party", "--config", cfg, "--name", "party0"]) == 2
    err = capsys.readouterr().err
    assert "address of party0" in err and "free host:port" in err
