"""``mpdp launch --engine``: every engine is reachable from the command line and refuses what it cannot do."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpdp.cli import build_parser, main
from mpdp.cli.launch_cmd import options_of
from mpdp.deploy.engine import ENGINES, LaunchOptions, engine_for
from mpdp.errors import ParameterError


def test_both_engines_are_choices_of_launch() -> None:
    assert sorted(ENGINES) == ["flower", "grpc"]
    args = build_parser().parse_args(["launch", "ofaa", "--engine", "flower", "--parties", "3"])
    assert args.engine == "flower"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["launch", "ofaa", "--engine", "ray"])
    with pytest.raises(ParameterError, match="engine"):
        engine_for("ray")


def test_every_engine_reads_the_same_launch_defaults() -> None:
    args = build_parser().parse_args(["launch", "ofaa"])
    assert options_of(args) == LaunchOptions(progress=options_of(args).progress)
    assert engine_for("grpc").name == "grpc"


@pytest.mark.parametrize(("argv", "why"), [(["ofaa", "--engine", "flower"], "--save with --engine grpc"),
                                           (["np-agt", "--parties", "2"], "releases no DP model")])
def test_launch_refuses_a_save_it_cannot_write_before_starting_any_process(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], why: str) -> None:
    # the gRPC engine's receiving party writes the released model (tests/deploy/test_release.py)
    code = main(["launch", *argv, "--dataset", "synthetic-mixed:n=60", "--save", str(tmp_path / "model")])
    assert code == 2
    assert why in capsys.readouterr().err
    assert not (tmp_path / "model").exists()
