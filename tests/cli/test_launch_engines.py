"""``mpdp launch --engine``: every engine is reachable from the command line and refuses what it cannot do."""

from __future__ import annotations

import pytest

from mpdp.cli import build_parser, main
from mpdp.cli.launch_cmd import ENGINES, launch_flower, launch_grpc


def test_both_engines_are_choices_of_launch() -> None:
    assert ENGINES == {"grpc": launch_grpc, "flower": launch_flower}
    args = build_parser().parse_args(["launch", "ofaa", "--engine", "flower", "--parties", "3"])
    assert args.engine == "flower" and ENGINES[args.engine] is launch_flower
    with pytest.raises(SystemExit):
        build_parser().parse_args(["launch", "ofaa", "--engine", "ray"])


def test_launch_refuses_save_before_starting_any_process(tmp_path: object,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["launch", "ofaa", "--dataset", "synthetic-logistic:n=300,d=3", "--save", str(tmp_path)])
    assert code == 2
    assert "--save" in capsys.readouterr().err
