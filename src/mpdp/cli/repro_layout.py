"""How a reproduced table becomes a figure: panels, series and axes, before anything is drawn.

:func:`layout` turns a :class:`~mpdp.learning.registry.ReproTable` and the reproduction's
:class:`~mpdp.learning.registry.ReproFigure` hints into a :class:`Layout` that :mod:`mpdp.cli.plotting` draws.
The rules, so that every figure reads like a paper's:

* One quantity per y axis: every metric has its own panels; a ``panels`` setting (e.g. the number of parties
  ``m``) splits a metric further into small multiples.
* The x axis is a numeric setting (the hint's, else the one with the most distinct numbers). A row whose value
  there is not a number (``None``, ``"any"``) or that lacks the setting is the same at every x: it is drawn as
  a horizontal line across its panel (a non-private baseline, a method that does not iterate). Without a
  numeric setting, a categorical one is drawn as one row of dots per category.
* Series (the legend) are the values of the remaining varying settings; settings with one value are stated
  once under the title; a metric with a single row (e.g. the non-private model's accuracy beside curves of
  optimality gaps) is stated there too rather than drawn as a lone point.

Nothing here imports matplotlib: the layout is plain data, tested on its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mpdp.learning.registry import ReproFigure, ReproRow, ReproTable

__all__ = ["DEFAULT_LABELS", "Layout", "Mark", "Panel", "axis_label", "layout", "number", "table_axis"]

#: Axis labels, with units, for the settings and metrics the reproductions share; a reproduction's
#: :class:`~mpdp.learning.registry.ReproFigure` ``labels`` override them.
DEFAULT_LABELS: Mapping[str, str] = {
    "epsilon": "privacy budget ε",
    "eps": "privacy budget ε",
    "epoch": "epoch",
    "T": "gradient-descent iteration T",
    "m": "parties m",
    "parties": "parties K",
    "h_max": "maximum tree depth h_max",
    "sampling_rate": "fraction of the records used",
    "attributes": "attributes used (first k)",
    "accuracy": "test accuracy (fraction correct)",
    "misclassification": "misclassification rate (fraction of test records)",
    "mse": "test mean squared error",
    "test_nll": "test NLL per record (nats)",
    "seconds": "time (s)",
    "optimality gap": "optimality gap J(θ) − J(θ*)",
    "relative accuracy loss": "relative accuracy loss (θ* − θ, test)",
}


def axis_label(name: str, labels: Mapping[str, str]) -> str:
    """``name``'s axis label: the reproduction's, else :data:`DEFAULT_LABELS`', else the name itself."""
    return labels.get(name) or DEFAULT_LABELS.get(name) or name.replace("_", " ")


def number(value: Any) -> float | None:
    """``value`` as a position on a numeric axis, or None when it is not a finite number (None, "any", True)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class Mark:
    """One row placed in a panel: at ``x`` (a number, a category, or None for the same value at every x)."""

    series: str
    x: float | str | None
    mean: float
    std: float
    paper: float | None


@dataclass
class Panel:
    """One axes: a metric (its y quantity), the panel settings' values, and the marks drawn on it."""

    metric: str
    title: str
    mode: Literal["line", "dots"]
    marks: list[Mark] = field(default_factory=list)


@dataclass
class Layout:
    """Everything :mod:`mpdp.cli.plotting` draws: the title lines, the panels in reading order and their grid."""

    title: str
    notes: list[str]  # one-value settings and single-row metrics, stated under the title
    panels: list[Panel]
    columns: int
    x: str | None
    x_label: str
    x_integer: bool  # every x is an int: integer ticks only
    series: list[str]  # legend order
    y_labels: dict[str, str]  # by metric
    categories: list[str] = field(default_factory=list)  # dots mode: the category rows, top to bottom


def _numeric_counts(rows: Sequence[ReproRow]) -> dict[str, int]:
    seen: dict[str, set[float]] = {}
    for row in rows:
        for key, value in row.setting.items():
            x = number(value)
            if x is not None:
                seen.setdefault(key, set()).add(x)
    return {k: len(v) for k, v in seen.items()}


def table_axis(rows: Sequence[ReproRow]) -> str | None:
    """The numeric setting with the most distinct numbers (first seen on ties), or None when none varies.

    Values that are not numbers (``None``, ``"any"``) do not count: those rows are not placed on the axis.
    """
    counts = _numeric_counts(rows)
    best = max((c for c in counts.values()), default=0)
    return next((k for k, c in counts.items() if c == best), None) if best > 1 else None


def _values(rows: Sequence[ReproRow], key: str) -> list[Any]:
    out: list[Any] = []
    for row in rows:
        value = row.setting.get(key)
        if value is not None and value not in out:
            out.append(value)
    return out


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _name(setting: Mapping[str, Any], keys: Sequence[str], labels: Mapping[str, str]) -> str:
    parts = []
    for key in keys:
        value = setting.get(key)
        if value is None:
            continue
        parts.append(str(value) if isinstance(value, str) else f"{axis_label(key, labels)} = {_show(value)}")
    return ", ".join(parts)


def _keys(rows: Sequence[ReproRow]) -> list[str]:
    out: list[str] = []
    for row in rows:
        out += [k for k in row.setting if k not in out]
    return out


def layout(table: ReproTable, figure: ReproFigure | None = None) -> Layout:
    """The figure of ``table`` (the rules are in the module docstring)."""
    hints = figure or ReproFigure()
    labels = dict(hints.labels)
    metrics: dict[str, list[ReproRow]] = {}
    for row in table.rows:
        metrics.setdefault(row.metric, []).append(row)
    lone: list[ReproRow] = []
    if any(len(r) > 1 for r in metrics.values()):
        lone = [rows[0] for rows in metrics.values() if len(rows) == 1]  # stated, not drawn as a lone point
        metrics = {m: rows for m, rows in metrics.items() if len(rows) > 1}
    rows = [r for group in metrics.values() for r in group]
    keys = _keys(rows)
    numeric = _numeric_counts(rows)
    x = hints.x if hints.x in keys else table_axis(rows)
    mode: Literal["line", "dots"] = "line" if x is not None and numeric.get(x, 0) > 1 else "dots"
    if mode == "dots" and x is None:
        x = next((k for k in keys if len(_values(rows, k)) > 1), None)
    varying = [k for k in keys if len(_values(rows, k)) > 1 and k != x]
    constant = [k for k in keys if len(_values(rows, k)) == 1 and k != x]
    panel_keys = [k for k in hints.panels if k in varying]
    series_keys = [k for k in (hints.series if hints.series is not None else varying) if k in keys and k != x
                   and k not in panel_keys]
    leftover = [k for k in varying if k not in series_keys and k not in panel_keys]
    if leftover and not _unique(rows, x, [*panel_keys, *series_keys]):
        series_keys += leftover  # the hints left rows that would collide on one point: tell them apart
    fixed = {k: _values(rows, k)[0] for k in constant}
    notes = [", ".join(f"{axis_label(k, labels)} = {_show(v)}" for k, v in fixed.items())] if fixed else []
    for row in lone:
        what = _name(row.setting, [k for k in row.setting if row.setting[k] != fixed.get(k)], labels)
        paper = "" if row.paper is None else f" (paper {row.paper:.4g})"
        spread = f" ± {row.ours_std:.2g}" if row.ours_std else ""
        text = f"{axis_label(row.metric, labels)} = {row.ours_mean:.4g}{spread}{paper}"
        notes.append(f"{what}: {text}" if what else text)

    built: dict[tuple[str, tuple[Any, ...]], Panel] = {}
    series: list[str] = []
    for metric, group in metrics.items():
        combos: list[tuple[Any, ...]] = []
        for row in group:
            combo = tuple(row.setting.get(k) for k in panel_keys)
            if None not in combo and combo not in combos:
                combos.append(combo)
        for combo in combos or [()]:
            title = _name(dict(zip(panel_keys, combo, strict=True)), panel_keys, labels)
            panel = built[metric, combo] = Panel(metric, title, mode)
            for row in group:
                if any(row.setting.get(k) not in (None, v) for k, v in zip(panel_keys, combo, strict=True)):
                    continue  # another panel's row; a row without the panel setting belongs to every panel
                name = _name(row.setting, series_keys, labels) or axis_label(metric, labels)
                value = row.setting.get(x) if x is not None else None
                place: float | str | None = number(value) if mode == "line" else (
                    None if value is None else _show(value))
                panel.marks.append(Mark(name, place, row.ours_mean, row.ours_std, row.paper))
                if name not in series:
                    series.append(name)
    panels, columns = _arrange(built, list(metrics))
    xs = [row.setting.get(x) for row in rows] if x is not None else []
    x_integer = mode == "line" and all(isinstance(v, int) and not isinstance(v, bool) for v in xs if number(v) is
                                       not None)
    categories = [] if mode == "line" or x is None else [_show(v) for v in _values(rows, x)]
    return Layout(title=f"{table.id}: {table.title}", notes=notes, panels=panels, columns=columns, x=x,
                  x_label=axis_label(x, labels) if x is not None else "", x_integer=x_integer, series=series,
                  y_labels={m: axis_label(m, labels) for m in metrics}, categories=categories)


def _unique(rows: Sequence[ReproRow], x: str | None, keys: Sequence[str]) -> bool:
    seen = set()
    for row in rows:
        key = (row.metric, repr(row.setting.get(x)) if x else "", *(repr(row.setting.get(k)) for k in keys))
        if key in seen:
            return False
        seen.add(key)
    return True


def _arrange(built: Mapping[tuple[str, tuple[Any, ...]], Panel], metrics: Sequence[str]) -> tuple[list[Panel], int]:
    """Reading order and columns: a grid of panel settings (rows) by metric (columns) when every panel setting
    has every metric; else metric after metric, up to 3 panels a row."""
    combos: list[tuple[Any, ...]] = []
    for _, combo in built:
        if combo not in combos:
            combos.append(combo)
    if len(metrics) > 1 and len(combos) > 1 and all((m, c) in built for m in metrics for c in combos):
        return [built[m, c] for c in combos for m in metrics], len(metrics)
    panels = list(built.values())
    return panels, max(1, min(3, len(panels)))
