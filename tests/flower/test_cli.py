"""``mpdp launch --engine flower``: the same data, split and budget as ``mpdp run``, handed to the Flower launcher;
its record has the fields of every engine's."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("flwr")

from mpdp.cli import main
from mpdp.deploy.engine import DEPLOYMENT_FIELDS
from mpdp.flower.inprocess import run_in_process


def test_flower_builds_mpdp_runs_config_and_prints_the_record(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, Any] = {}

    def in_process(algorithm: str, config: Any, **kwargs: Any) -> Any:
        seen.update(algorithm=algorithm, config=config, **kwargs)
        return run_in_process(algorithm, config, **kwargs)

    monkeypatch.setattr("mpdp.flower.launcher.launch", in_process)
    code = main(["launch", "mpc-gradp", "--engine", "flower", "--dataset", "synthetic-logistic:n=300,d=4",
                 "--parties", "5", "--seed", "3", "--option", "T=2", "--max-dropouts", "1", "--insecure", "--json"])
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    assert record["algorithm"] == "mpc-gradp" and record["options"]["cohort"] == 1
    assert set(DEPLOYMENT_FIELDS) <= set(record["deployment"]) and record["deployment"]["engine"] == "flower"
    config = seen["config"]
    assert seen["algorithm"] == "mpc-gradp" and config.parties == 5 and config.settings.T == 2
    assert config.settings.non_default() == {"T": 2}
    assert seen["seed"] == 3 and seen["max_dropouts"] == 1 and seen["tls"] is False
