"""A deployed run releases a model: the party that receives the release writes the ``mpdp run --save`` file.

Two checks. For every algorithm ``mpdp run --save`` can save, the receiving party's
:meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.release`, read in the shared public schema
(:func:`~mpdp.learning.release.build.deployed_model`), holds the same kind, parameters, schema and privacy as
the in-memory run's saved model, from the parties' own results (in memory, no processes: every algorithm). And
deployments over gRPC (``mpdp launch``, one process per party) of a vertical and a horizontal algorithm write a
folder that ``mpdp predict`` reads, whose predictions equal those of the seeded ``mpdp run --save``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mpdp.cli import build_parser, main
from mpdp.cli.run_cmd import build_config
from mpdp.deploy.deployments import deployment_for
from mpdp.learning.registry import get_algorithm
from mpdp.learning.release.build import deployed_model, released_model, savable
from mpdp.learning.release.format import read_model
from mpdp.learning.spec.deployment import shared_parameters
from mpdp.learning.spec.memory import assemble_report, run_parties
from tests.run_cases import CASES, DATA


def _config(algorithm: str) -> Any:
    args = build_parser().parse_args(["run", algorithm, *DATA, *CASES[algorithm]])
    spec = get_algorithm(algorithm)
    config, _ = build_config(spec, args), None
    return deployment_for(algorithm).prepare(spec.configure(config))


@pytest.mark.parametrize("algorithm", savable())
def test_the_receiving_party_holds_the_model_run_save_writes(algorithm: str) -> None:
    deployment = deployment_for(algorithm)
    config = _config(algorithm)
    plan = deployment.plan(algorithm, config)
    outcomes = run_parties(deployment, config, plan)
    report = assemble_report(deployment, config, plan, outcomes, {})
    saved = released_model(report, config.train, label_classes=config.train.label_classes)
    shared = shared_parameters(plan)
    receiver = deployment.receiver(shared)
    assert receiver in plan.parties
    for party in plan.parties:  # only the receiver holds it
        if party != receiver:
            assert deployment.release(party, shared, outcomes[party]) is None
    release = deployment.release(receiver, shared, outcomes[receiver])
    assert release is not None
    model = deployed_model(algorithm, shared["schema"], release, {"party": receiver})
    assert (model.kind, model.schema, model.epsilon_spent, model.delta_spent) == \
        (saved.kind, saved.schema, saved.epsilon_spent, saved.delta_spent)
    assert model.per_party == saved.per_party
    assert json.dumps(model.parameters, sort_keys=True) == json.dumps(saved.parameters, sort_keys=True)


@pytest.mark.parametrize("algorithm", ["pfds", "np-agt"])
def test_an_evaluated_party_reports_the_metric_the_report_averages(algorithm: str) -> None:
    deployment = deployment_for(algorithm)
    config = _config(algorithm)
    plan = deployment.plan(algorithm, config)
    outcomes = run_parties(deployment, config, plan)
    report = assemble_report(deployment, config, plan, outcomes, {})
    shared = shared_parameters(plan)
    metrics = {p: deployment.party_metric(p, shared, outcomes[p]) for p in plan.parties}
    scored = [m for p, m in metrics.items() if p in plan.evaluation]
    assert len(scored) == 2 and all(m is not None and m.name == report.metric.name for m in scored)
    assert all(metrics[p] is None for p in plan.parties if p not in plan.evaluation)
    assert sum(m.value for m in scored if m is not None) / 2 == pytest.approx(report.metric.value, abs=1e-12)


@pytest.mark.parametrize("algorithm", ["dp-pred", "np-agt"])
def test_an_algorithm_without_a_release_has_no_receiver(algorithm: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    deployment = deployment_for(algorithm)
    plan = deployment.plan(algorithm, _config(algorithm))
    assert deployment.receiver(shared_parameters(plan)) is None
    # launch --save is refused before any party starts
    assert main(["launch", algorithm, *DATA, *CASES[algorithm], "--save", str(tmp_path / "m")]) != 0
    assert f"UnsupportedModelError: --save: received '{algorithm}'" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def _rows(tmp_path: Path) -> Path:
    """A CSV of the synthetic dataset's attributes, written by the twin of a saved run (any rows in the schema)."""
    out = tmp_path / "rows.csv"
    from mpdp.datasets import load_dataset

    data = load_dataset("synthetic-mixed:n=40")
    names = [a.name for a in data.attributes]
    lines = [",".join(names)]
    for row in data.values if data.values is not None else ():
        cells = []
        for attr, v in zip(data.attributes, row, strict=True):
            cells.append((attr.categories or ())[int(v)] if attr.kind == "categorical" else f"{v:.10g}")
        lines.append(",".join(cells))
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.net
@pytest.mark.parametrize("algorithm", ["fm-logistic", "local-outp"])
def test_a_launched_run_writes_the_model_predict_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       algorithm: str) -> None:
    pytest.importorskip("grpc")
    argv = [algorithm, *DATA, *CASES[algorithm]]
    assert main(["run", *argv, "--save", str(tmp_path / "memory"), "--json"]) == 0
    capsys.readouterr()
    if algorithm == "fm-logistic":  # the receiving party's own output folder, kept
        assert main(["launch", *argv, "--keep", str(tmp_path / "parties"), "--timeout", "60", "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        written = Path(record["deployment"]["released"])
        shared = json.loads((tmp_path / "parties" / "shared.json").read_text())
        receiver = deployment_for(algorithm).receiver(shared)
        assert written == tmp_path / "parties" / str(receiver) / "output" / "model.json"
        party = json.loads((written.parent / "party.json").read_text())
        assert party["saved"]["model"] == str(written) and party["party"] == receiver
    else:  # launch --save DIR: the receiving party writes there
        assert main(["launch", *argv, "--save", str(tmp_path / "deployed"), "--timeout", "60", "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        written = Path(record["saved"]["model"])
        assert written == (tmp_path / "deployed" / "model.json").resolve()
    rows = _rows(tmp_path)
    for folder in ("memory", "deployed"):
        source = tmp_path / "memory" if folder == "memory" else written.parent
        assert main(["predict", "--model", str(source), "--dataset", str(rows),
                     "--out", str(tmp_path / f"{folder}.csv")]) == 0
    assert (tmp_path / "deployed.csv").read_text() == (tmp_path / "memory.csv").read_text()
    assert read_model(written.parent).parameters == read_model(tmp_path / "memory").parameters
