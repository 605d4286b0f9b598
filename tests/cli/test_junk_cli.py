"""The junk-input sweep of the command line (issue 42): every ``mpdp`` command answers junk in any of its
options with a typed error (exit 2, one ``mpdp: error:`` line) or a success, never a traceback.

Each case puts every word of :data:`WORDS`, then a few hypothesis-drawn ones (:data:`JUNK`, derandomized so a run
repeats the last one's draws): NaN, infinities, huge and negative numbers, empty text,
separators, control and non-ASCII characters, paths that do not exist, or arbitrary short text) into one slot of
one command line whose other words are valid and cheap. ``main`` must return 0 or 2 (argparse's usage errors
exit 2 as well) and stderr must hold no traceback. Commands that would start long work when the junk happens to
be valid (``launch`` with a valid party count, ``bench`` with a suite's name) get slots where no valid word is
drawn from :data:`JUNK`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpdp.cli import COMMANDS, main

#: words that break parsers: numbers at and beyond their ends, separators, empty and odd text, missing paths
WORDS = ["", " ", "nan", "NaN", "inf", "-inf", "-1", "0", "-0", "1e400", "1e-400", "9" * 40, "-" + "9" * 40,
         "0x10", "1_000", "abc", "1,2", ",", ";", "=", "x=y", "a=", "=1", "a=b=c", "\x00", "ü", "é,é", "\t",
         "{missing}", "{missing}.csv", "-", "--", "true", "[1]", '{"a": 1}']
JUNK = st.one_of(st.sampled_from(WORDS), st.text(alphabet=st.characters(blacklist_categories=["Cs"]),
                                                  max_size=8).filter(lambda w: not w.startswith("-")))

SMALL = ["--dataset", "synthetic-logistic:n=60,d=2", "--seed", "1"]
#: command -> command lines with one slot ``{j}`` for the junk word
SLOTS: dict[str, list[list[str]]] = {
    "run": [["run", "{j}", *SMALL], *(["run", "ofpa", *SMALL, flag, "{j}"] for flag in (
        "--epsilon", "--delta", "--parties", "--test-fraction", "--option", "--dataset", "--fractions",
        "--split-seed", "--seed", "--backend", "--anchor"))],
    "launch": [["launch", "{j}"], ["launch", "ofpa", "--option", "{j}"], ["launch", "ofpa", "--epsilon", "{j}"]],
    "reproduce": [["reproduce", "{j}"]],
    "datasets": [["datasets", "show", "--dataset", "{j}"], ["datasets", "{j}"]],
    "predict": [["predict", "--model", "{j}", "--dataset", "{tmp}/x.csv", "--out", "{tmp}/p.csv"],
                ["predict", "--model", "{tmp}/model", "--dataset", "{j}", "--out", "{tmp}/p.csv"]],
    "synthesize": [["synthesize", "--model", "{tmp}/model", "--rows", "{j}", "--out", "{tmp}/t.csv"],
                   ["synthesize", "--model", "{j}", "--rows", "3", "--out", "{tmp}/t.csv"]],
    "align": [["align", "--data", "{j}", "--data", "b={tmp}/x.csv", "--id-column", "id"],
              ["align", "--data", "a={tmp}/x.csv", "--data", "b={tmp}/x.csv", "--id-column", "{j}"]],
    "audit": [["audit", "{j}"]],
    "certs": [["certs", "--out", "{tmp}/certs", "--parties", "{j}"]],
    "party": [["party", "--config", "{tmp}/junk.json"], ["party", "--config", "{j}"]],
    "demo": [["demo", "--length", "{j}"], ["demo", "--parties", "{j}"], ["demo", "--seed", "{j}"]],
    "bench": [["bench", "{j}x"]],
}
CASES = [(command, k) for command, lines in SLOTS.items() for k in range(len(lines))]


def test_every_command_has_junk_slots() -> None:
    assert set(SLOTS) == set(COMMANDS)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("junk")
    (tmp / "x.csv").write_text("id,x0,x1\n1,0.5,0.25\n2,-0.5,0\n")
    (tmp / "model").mkdir()
    return tmp


def _check(command: str, case: int, word: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    word = word.replace("{missing}", str(folder / "missing"))
    (folder / "junk.json").write_text(word)
    line = [w.replace("{tmp}", str(folder)).replace("{j}", word) for w in SLOTS[command][case]]
    try:
        code = main(line)
    except SystemExit as exc:  # argparse: usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, (line, err[-2000:])
    assert code in (0, 2), (line, code, err[-2000:])


@pytest.mark.parametrize(("command", "case"), CASES)
def test_every_listed_junk_word_in_any_option_is_a_typed_error(command: str, case: int, folder: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for word in WORDS:
        _check(command, case, word, folder, capsys)


@pytest.mark.parametrize(("command", "case"), CASES)
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(word=JUNK)
def test_drawn_junk_in_any_option_is_a_typed_error(command: str, case: int, word: str, folder: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _check(command, case, word, folder, capsys)
