"""``--plot``: every reproduction's figure is drawn and readable; ``mpdp run``'s curves too.

The reproduction figures are rendered from ``tests/cli/data/reproductions/<id>.json``: the exact output of
``mpdp reproduce <id> --quick --json --seed 1`` (real rows, seconds of compute each; rendering them here costs
about half a second a figure, running them would cost about two minutes). A new reproduction needs its file
(the first test says which); regenerate one with

    mpdp reproduce ID --quick --json --seed 1 > tests/cli/data/reproductions/ID.json

What is checked on each figure, after drawing it: every panel has both axis labels (a panel whose category
labels are shared with its row's first panel, that one's), the legend overlaps no panel, the title lies inside
the figure (not clipped), tick labels do not overlap one another, every legend entry has data drawn inside a
panel in its colour, and an x axis that counts (epochs, iterations, parties) has integer ticks only.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from mpdp.cli import main
from mpdp.cli.plotting import curves_figure, table_figure
from mpdp.cli.repro_layout import layout
from mpdp.learning import registry
from mpdp.learning.registry import ReproRow, ReproTable
from mpdp.learning.spec.run import Curve

DATA = Path(__file__).parent / "data" / "reproductions"
IDS = sorted(registry.reproductions())
STYLE_ENTRIES = ("paper's number", "ours: ± 1 std over repetitions")


def load_table(path: Path) -> ReproTable:
    record = json.loads(path.read_text())
    rows = [ReproRow(r["setting"], r["metric"], r["paper"], r["ours"]["mean"], r["ours"]["std"],
                     r["ours"]["repetitions"]) for r in record["rows"]]
    return ReproTable(record["id"], record["title"], rows, record["notes"], record["seconds"])


def test_every_reproduction_has_a_recorded_quick_run() -> None:
    assert {p.stem for p in DATA.glob("*.json")} == set(IDS)


def overlaps(a: Any, b: Any) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


def visible_axes(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.axison]


def check_readable(fig: Any) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = visible_axes(fig)
    assert axes
    figure_box = fig.bbox
    for ax in axes:
        assert ax.get_xlabel(), f"panel {ax.get_title()!r} has no x label"
        shows_y = any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())
        first = next(a for a in axes if a.get_subplotspec().rowspan == ax.get_subplotspec().rowspan)
        assert ax.get_ylabel() or (not shows_y and first.get_ylabel()), f"panel {ax.get_title()!r}: no y label"
        for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
            boxes = [t.get_window_extent(renderer) for t in labels if t.get_visible() and t.get_text()]
            for a, b in combinations(boxes, 2):
                assert not overlaps(a, b), f"tick labels overlap on {ax.get_title()!r}"
    title = fig._suptitle  # the figure's title: inside the figure, whatever its length
    if title is not None:
        box = title.get_window_extent(renderer)
        assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1 and box.y1 <= figure_box.y1
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1 and figure_box.y0 <= box.y0
        for ax in axes:
            assert not overlaps(box, ax.get_window_extent(renderer)), "the legend covers a panel"
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if text.get_text() in STYLE_ENTRIES:
                continue
            assert drawn_in_colour(axes, to_rgba(handle.get_color())), f"{text.get_text()!r}: nothing drawn"


def drawn_in_colour(axes: list[Any], colour: tuple[float, ...]) -> bool:
    """Some line of that colour has a point inside its panel (a point at x = 0 on a log axis is not)."""
    for ax in axes:
        for line in ax.get_lines():
            if to_rgba(line.get_color()) != colour or len(line.get_xdata()) == 0:
                continue
            points = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            box = ax.bbox
            if np.any((points[:, 0] >= box.x0 - 1) & (points[:, 0] <= box.x1 + 1) & (points[:, 1] >= box.y0 - 1)
                      & (points[:, 1] <= box.y1 + 1)):
                return True
    return False


@pytest.mark.parametrize("table_id", IDS)
def test_reproduction_figure_is_readable(table_id: str) -> None:
    path = DATA / f"{table_id}.json"
    if not path.exists():
        pytest.fail(f"no recorded quick run for {table_id}: see this module's docstring")
    table = load_table(path)
    figure = registry.get_reproduction(table_id).figure
    fig = table_figure(table, figure)
    check_readable(fig)
    lay = layout(table, figure)
    if lay.x_integer:
        for ax in visible_axes(fig):
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert all(float(t).is_integer() for t in ticks), f"{table_id}: fractional ticks on a count"


def test_rows_off_the_axis_are_drawn_across_it() -> None:
    """``None`` and ``"any"`` on the x setting (001-fig2's LR_NoPrivacy, 003's output perturbation) are lines
    the same at every x; a single-row metric and one-value settings are stated under the title."""
    rows = [ReproRow({"method": "baseline", "epsilon": None, "K": 3}, "error", 0.2, 0.25, 0.01, 2),
            ReproRow({"method": "flat", "epsilon": "any", "K": 3}, "error", None, 0.3, 0.0, 2),
            ReproRow({"method": "non-private"}, "accuracy", None, 0.9, 0.0, 1)]
    rows += [ReproRow({"method": "ours", "epsilon": e, "K": 3}, "error", None, 0.5 / e, 0.01, 2) for e in (1, 2, 4)]
    lay = layout(ReproTable("toy-fig", "toy", rows))
    assert lay.x == "epsilon" and lay.x_integer and [p.metric for p in lay.panels] == ["error"]
    marks = {m.series: m for m in lay.panels[0].marks}
    assert marks["baseline"].x is None and marks["flat"].x is None and marks["ours"].x == 4.0
    assert lay.series == ["baseline", "flat", "ours"]
    assert lay.notes[0] == "K = 3" and "non-private: test accuracy (fraction correct) = 0.9" in lay.notes
    check_readable(table_figure(ReproTable("toy-fig", "toy", rows)))


def test_panels_split_each_metric_and_grid_by_metric() -> None:
    rows = [ReproRow({"m": m, "method": k, "T": t}, metric, None, 1.0 + t, 0.0, 1)
            for m in (10, 100) for k in ("a", "b") for t in (1, 10, 100) for metric in ("gap", "loss")]
    lay = layout(ReproTable("toy", "toy", rows), registry.ReproFigure(x="T", series=("method",), panels=("m",)))
    assert lay.columns == 2 and [(p.title, p.metric) for p in lay.panels] == [
        ("parties m = 10", "gap"), ("parties m = 10", "loss"), ("parties m = 100", "gap"), ("parties m = 100", "loss")]
    assert lay.series == ["a", "b"]


def test_run_curves_figure() -> None:
    epochs = tuple(float(e) for e in range(1, 34))
    curves = [Curve("MPC", epochs, tuple(20 - 0.1 * e for e in epochs), "epoch", "test NLL"),
              Curve("float", epochs, tuple(20 - 0.1 * e for e in epochs), "epoch", "test NLL"),
              Curve("optimality gap", epochs, tuple(10.0 ** -e / 5 for e in epochs), "epoch", "J - J*")]
    fig = curves_figure(curves, title="a long title " * 12)
    check_readable(fig)
    for ax in visible_axes(fig):
        assert all(float(t).is_integer() for t in ax.get_xticks())
    assert fig.axes[1].get_yscale() == "log"


def test_json_says_where_the_plot_went(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(registry, "MODULES", (*registry.MODULES, "tests.cli.toy_algorithms"))
    monkeypatch.setattr(registry, "REPRODUCTION_MODULES", (*registry.REPRODUCTION_MODULES, "tests.cli.toy_algorithms"))
    out = tmp_path / "table.png"
    assert main(["reproduce", "toy-table1", "--quick", "--json", "--plot", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["plot"] == str(out) and out.read_bytes()[:4] == b"\x89PNG"
    curve = tmp_path / "curve.svg"
    assert main(["run", "toy-vertical", "--dataset", "synthetic-mixed:n=60", "--json", "--seed", "1",
                 "--plot", str(curve)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["plot"] == str(curve) and curve.read_text().lstrip().startswith("<?xml")
    assert main(["run", "toy-horizontal", "--dataset", "synthetic-linear:n=60,d=3", "--json", "--plot",
                 str(tmp_path / "none.png")]) == 0
    assert json.loads(capsys.readouterr().out)["plot"] is None  # no curve reported: nothing plotted, and said

