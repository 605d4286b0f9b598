"""``mpdp launch --engine flower``: the same data, split and budget as ``mpdp run``, handed to the Flower launcher."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mpdp.cli import main


def test_flower_builds_mpdp_runs_config_and_prints_the_record(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, Any] = {}

    def fake_launch(algorithm: str, config: Any, **kwargs: Any) -> dict[str, Any]:
        seen.update(algorithm=algorithm, config=config, **kwargs)
        return {"engine": "flower", "algorithm": algorithm}

    monkeypatch.setattr("mpdp.flower.launcher.launch", fake_launch)
    code = main(["launch", "mpc-gradp", "--engine", "flower", "--dataset", "synthetic-logistic:n=300,d=4",
                 "--parties", "5", "--seed", "3", "--option", "T=2", "--max-dropouts", "1", "--insecure", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["engine"] == "flower"
    config = seen["config"]
    assert seen["algorithm"] == "mpc-gradp" and config.parties == 5 and config.settings.T == 2
    assert config.settings.non_default() == {"T": 2}
    assert seen["seed"] == 3 and seen["max_dropouts"] == 1 and seen["tls"] is False
