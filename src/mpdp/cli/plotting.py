"""``--plot out.png``: curves of a run, and a reproduced table drawn like the paper's figure.

:func:`plot_table` draws the :class:`~mpdp.cli.repro_layout.Layout` of a reproduced table: one panel per metric
(and per ``panels`` setting), ours as lines with markers and a shaded band of one standard deviation over the
repetitions, the paper's numbers as dashed lines with crosses in the same colour (in dark grey where several
series share them), rows that do not depend on x as horizontal lines; or, for a categorical table, a row of
dots per category with error bars. :func:`plot_curves` draws ``mpdp run``'s curves, one panel per y quantity.

Every figure is laid out by matplotlib's constrained layout with the legend outside the panels, below them
(it can cover no data), titles wrapped to the figure's width, every axis labelled, integer ticks where x
counts (epochs, iterations), the paper's own x values as ticks where there are few, and a log scale where y
values span 20 times or more, or x values are spaced geometrically over 20 times or more.

matplotlib is the optional ``plot`` extra; without it the commands say how to install it.
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpdp.cli.repro_layout import Layout, Mark, Panel, axis_label, layout
from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import ReproFigure, ReproTable
from mpdp.learning.spec.run import Curve

__all__ = ["check_plot_target", "curves_figure", "plot_curves", "plot_table", "table_figure"]

_PANEL = (4.8, 3.3)  # inches per panel
_FONT = 9
_PAPER_SHARED = "0.25"  # the colour of a paper curve several series share


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError(explain("--plot", "matplotlib is not installed", "the plot extra",
                                     "pip install 'mpdp[plot]'")) from None
    return plt


def _check_path(path: str | Path) -> Path:
    out = Path(path)
    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ParameterError(explain("--plot", str(path), "a .png, .pdf or .svg file name", "write e.g. out.png"))
    return out


def check_plot_target(path: str | Path) -> None:
    """Fail before a long run, not after it: a supported file type and matplotlib installed."""
    _check_path(path)
    _pyplot()


def _save(fig: Any, path: str | Path) -> Path:
    out = _check_path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    _pyplot().close(fig)
    return out


# -- shared pieces ------------------------------------------------------------------------------------------------
_MARKERS = ("o", "s", "^", "D", "v", "h", "p", "<", ">", "8")  # no "x"-like shape: that is the paper's


@dataclass(frozen=True)
class _Style:
    """A series' look: colour, and an open marker whose shape and size differ too, so series that coincide
    stay visible (an earlier series' larger marker shows around a later one's) and the figure reads in grey."""

    colour: Any
    marker: str
    size: float
    width: float


def _styles(names: Sequence[str]) -> dict[str, _Style]:
    plt = _pyplot()
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {name: _Style(cmap(i % cmap.N), _MARKERS[i % len(_MARKERS)], max(4.5, 11.0 * 0.76**i), 1.8)
            for i, name in enumerate(names)}


def _every(points: int) -> int:
    """Markers on about ten points of a long curve."""
    return max(1, points // 10)


def _log_scale(values: Sequence[float], ratio: float) -> bool:
    finite = [v for v in values if math.isfinite(v)]
    return bool(finite) and min(finite) > 0 and max(finite) / min(finite) >= ratio


def _log_x(values: Sequence[float]) -> bool:
    """A log x axis for positive values spanning 20 times or more that are spaced geometrically (half of them at
    or below their geometric mean: eps 0.1, 0.2, ..., 3.2 or iterations 1, 10, 100), not for evenly spaced ones
    (epochs 1 .. 33)."""
    distinct = sorted(set(values))
    if not _log_scale(distinct, 20.0):
        return False
    middle = math.exp(sum(math.log(v) for v in distinct) / len(distinct)) * (1 + 1e-9)
    return 2 * sum(v <= middle for v in distinct) >= len(distinct)


def _limits(values: Sequence[float], log: bool) -> tuple[float, float] | None:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    lo, hi = min(finite), max(finite)
    if log:
        return lo / 1.6, hi * 1.6
    pad = 0.08 * (hi - lo) if hi > lo else max(abs(hi) * 0.05, 1e-12)
    return lo - pad, hi + pad


def _x_axis(ax: Any, xs: Sequence[float], *, integer: bool, log: bool) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

    distinct = sorted(set(xs))
    if log:
        ax.set_xscale("log")
    if 1 < len(distinct) <= 8:  # the table's own values as ticks, as a paper prints them
        ax.xaxis.set_major_locator(FixedLocator(distinct))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif integer and not log:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _title(fig: Any, lines: Sequence[str], width_in: float) -> None:
    chars = max(40, int(width_in * 72 / (0.56 * (_FONT + 1))))
    wrapped = [textwrap.fill(line, chars) for line in lines if line]
    fig.suptitle("\n".join(wrapped), fontsize=_FONT + 1)


def _legend(fig: Any, handles: Sequence[Any], width_in: float) -> Any:
    if not handles:
        return None
    longest = max(len(h.get_label()) for h in handles)
    per_row = max(1, min(len(handles), int(width_in * 72 / (0.55 * (_FONT - 1) * longest + 40))))
    return fig.legend(handles=list(handles), loc="outside lower center", ncols=per_row, fontsize=_FONT - 1,
                      frameon=False)


def _grid(plt: Any, panels: int, columns: int, *, extra_height: float, sharey: bool = False) -> tuple[Any, Any]:
    rows = max(1, math.ceil(panels / columns))
    size = (max(7.0, _PANEL[0] * columns + 0.4), _PANEL[1] * rows + extra_height)
    fig = plt.figure(figsize=size, layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharey=sharey)
    for ax in axes.flat[panels:]:
        ax.set_axis_off()
    return fig, axes


# -- a reproduced table -------------------------------------------------------------------------------------------
def table_figure(result: ReproTable, figure: ReproFigure | None = None) -> Any:
    """The matplotlib figure of ``result`` (see the module docstring); the caller saves and closes it."""
    plt = _pyplot()
    lay = layout(result, figure)
    if not lay.panels:
        raise ParameterError(explain(f"{result.id} rows", len(result.rows), "rows to plot",
                                     "the reproduction returned nothing drawable"))
    styles = _styles(lay.series)
    dots = lay.panels[0].mode == "dots"
    extra = 1.0 + 0.2 * len(lay.notes) + 0.25 * math.ceil(len(lay.series) / 3)
    fig, axes = _grid(plt, len(lay.panels), lay.columns, extra_height=extra, sharey=dots)
    logs = {m: _log_scale([v for p in lay.panels if p.metric == m for k in p.marks
                           for v in (k.mean, k.paper) if v is not None], 20.0) for m in lay.y_labels}
    shared = _shared_paper(lay.panels)
    drawn: set[str] = set()
    for ax, panel in zip(axes.flat, lay.panels, strict=False):
        if dots:
            drawn |= _dots(ax, panel, lay, styles, logs[panel.metric], shared)
        else:
            drawn |= _lines(ax, panel, lay, styles, logs[panel.metric], shared)
        if panel.title:
            ax.set_title(panel.title, fontsize=_FONT)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=_FONT - 1)
    if dots:
        for row in axes:
            row[0].set_ylabel(lay.x_label, fontsize=_FONT)
    handles = _table_handles(lay, styles, drawn, dots)
    width = fig.get_figwidth()
    _legend(fig, handles, width)
    _title(fig, [lay.title, *lay.notes], width)
    return fig


def plot_table(result: ReproTable, path: str | Path, figure: ReproFigure | None = None) -> Path:
    """Draw ``result`` (with its reproduction's ``figure`` hints) into ``path`` (.png, .pdf or .svg)."""
    _check_path(path)
    return _save(table_figure(result, figure), path)


def _shared_paper(panels: Sequence[Panel]) -> set[tuple[int, str]]:
    """(panel index, series) whose paper numbers another series of that panel repeats exactly."""
    out: set[tuple[int, str]] = set()
    for i, panel in enumerate(panels):
        curves: dict[str, tuple[Any, ...]] = defaultdict(tuple)
        for mark in panel.marks:
            if mark.paper is not None:
                curves[mark.series] += ((mark.x, mark.paper),)
        owners: dict[tuple[Any, ...], list[str]] = defaultdict(list)
        for name, curve in curves.items():
            owners[tuple(sorted(curve, key=repr))].append(name)
        out |= {(i, name) for names in owners.values() if len(names) > 1 for name in names}
    return out


def _lines(ax: Any, panel: Panel, lay: Layout, styles: dict[str, _Style], log: bool,
           shared: set[tuple[int, str]]) -> set[str]:
    index = lay.panels.index(panel)
    by_series: dict[str, list[Mark]] = defaultdict(list)
    for mark in panel.marks:
        by_series[mark.series].append(mark)
    ys: list[float] = []
    xs: list[float] = []
    bands: list[tuple[Any, ...]] = []
    for name, marks in by_series.items():
        style = styles[name]
        colour = style.colour
        paper_colour = _PAPER_SHARED if (index, name) in shared else colour
        placed = sorted((m for m in marks if isinstance(m.x, float)), key=lambda m: float(m.x or 0.0))
        if placed:
            x = np.array([float(m.x or 0.0) for m in placed])
            mean = np.array([m.mean for m in placed])
            std = np.array([m.std for m in placed])
            ax.plot(x, mean, color=colour, lw=style.width, marker=style.marker, ms=style.size, mfc="none",
                    mew=1.5, markevery=_every(len(x)))
            if np.any(std > 0):
                bands.append((x, mean - std, mean + std, colour))
            paper = [(float(m.x or 0.0), m.paper) for m in placed if m.paper is not None]
            if paper:
                ax.plot(*zip(*paper, strict=True), color=paper_colour, ls="--", lw=1.2, marker="x", ms=6)
                ys += [p for _, p in paper]
            xs += list(x)
            ys += list(mean) + ([] if log else list(mean - std) + list(mean + std))
        for mark in marks:
            if mark.x is None:  # the same at every x
                ax.axhline(mark.mean, color=colour, lw=style.width)
                if mark.std > 0:
                    ax.axhspan(mark.mean - mark.std, mark.mean + mark.std, color=colour, alpha=0.12, lw=0)
                if mark.paper is not None:
                    ax.axhline(mark.paper, color=paper_colour, ls="--", lw=1.2)
                    ys.append(mark.paper)
                ys += [mark.mean] + ([] if log else [mark.mean - mark.std, mark.mean + mark.std])
    if log:
        ax.set_yscale("log")
    limits = _limits(ys, log)
    if limits:
        ax.set_ylim(*limits)
    for x, lo, hi, colour in bands:  # after the limits: a band may run off the axis, never stretch it
        ax.fill_between(x, np.maximum(lo, limits[0]) if (log and limits) else lo, hi, color=colour, alpha=0.18,
                        lw=0)
    if xs:
        xlog = _log_x(xs)
        _x_axis(ax, xs, integer=lay.x_integer, log=xlog)
        span = _limits(xs, xlog)
        if span:
            ax.set_xlim(*span)
    ax.set_xlabel(lay.x_label, fontsize=_FONT)
    ax.set_ylabel(lay.y_labels[panel.metric], fontsize=_FONT)
    return set(by_series)


def _dots(ax: Any, panel: Panel, lay: Layout, styles: dict[str, _Style], log: bool,
          shared: set[tuple[int, str]]) -> set[str]:
    index = lay.panels.index(panel)
    rows = {c: len(lay.categories) - 1 - i for i, c in enumerate(lay.categories)}  # first category on top
    values: list[float] = []
    for category, y in rows.items():
        marks = [m for m in panel.marks if m.x == category]
        offsets = [0.0] if len(marks) == 1 else [-0.28 + 0.56 * i / (len(marks) - 1) for i in range(len(marks))]
        for mark, off in zip(marks, offsets, strict=True):
            style = styles[mark.series]
            colour = style.colour
            err = None
            if mark.std > 0:
                err = [[min(mark.std, mark.mean * 0.999) if log else mark.std], [mark.std]]
            ax.errorbar([mark.mean], [y + off], xerr=err, fmt=style.marker, color=colour, ms=6, capsize=2, lw=1.2)
            values.append(mark.mean)
            if mark.paper is not None:
                paper_colour = _PAPER_SHARED if (index, mark.series) in shared else colour
                ax.plot([mark.paper], [y + off], ls="", marker="x", ms=8, mew=2, color=paper_colour)
                values.append(mark.paper)
    for y in list(rows.values())[:-1]:
        ax.axhline(y - 0.5, color="0.85", lw=0.8)
    ax.set_yticks(list(rows.values()), list(rows))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    if log:
        ax.set_xscale("log")
    limits = _limits(values, log)
    if limits:
        ax.set_xlim(*limits)
    ax.set_xlabel(lay.y_labels[panel.metric], fontsize=_FONT)
    return {m.series for m in panel.marks}


def _table_handles(lay: Layout, styles: dict[str, _Style], drawn: set[str], dots: bool) -> list[Any]:
    from matplotlib.lines import Line2D

    placed = {m.series for p in lay.panels for m in p.marks if m.x is not None}
    handles = [Line2D([], [], color=styles[name].colour, lw=0 if dots else styles[name].width,
                      marker=styles[name].marker if name in placed else "", ms=styles[name].size if not dots else 6,
                      mfc="none" if not dots else styles[name].colour, mew=1.5, label=name)
               for name in lay.series if name in drawn]
    if any(m.paper is not None for p in lay.panels for m in p.marks):
        handles.append(Line2D([], [], color=_PAPER_SHARED, lw=0 if dots else 1.2, ls="--", marker="x", ms=7,
                              label="paper's number"))
    if any(m.std > 0 for p in lay.panels for m in p.marks):
        handles.append(Line2D([], [], color="0.5", lw=0 if dots else 6, alpha=0.5 if not dots else 1.0,
                              marker="" if not dots else "_", ms=12,
                              label="ours: ± 1 std over repetitions"))
    return handles


# -- a run's curves ---------------------------------------------------------------------------------------------
def curves_figure(curves: Sequence[Curve], *, title: str) -> Any:
    """One panel per distinct y label, every curve with that label on it; the caller saves and closes it."""
    plt = _pyplot()
    by_label: dict[str, list[Curve]] = defaultdict(list)
    for curve in curves:
        by_label[curve.y_label].append(curve)
    names = list(dict.fromkeys(c.name for c in curves))
    styles = _styles(names)
    legend = any(len(group) > 1 for group in by_label.values())
    extra = 0.9 + (0.3 * math.ceil(len(names) / 3) if legend else 0.0)
    fig, axes = _grid(plt, len(by_label), min(3, len(by_label)), extra_height=extra)
    for ax, (label, group) in zip(axes.flat, by_label.items(), strict=False):
        xs: list[float] = []
        ys: list[float] = []
        for curve in group:
            style = styles[curve.name]
            ax.plot(curve.x, curve.y, color=style.colour, lw=style.width, marker=style.marker, ms=style.size,
                    mfc="none", mew=1.5, markevery=_every(len(curve.x)), label=curve.name)
            xs += list(curve.x)
            ys += list(curve.y)
        log = _log_scale(ys, 100.0)
        if log:
            ax.set_yscale("log")
        integer = all(float(v).is_integer() for v in xs)
        _x_axis(ax, xs, integer=integer, log=_log_x(xs))
        ax.set_xlabel(axis_label(group[0].x_label, {}), fontsize=_FONT)
        ax.set_ylabel(axis_label(label, {}), fontsize=_FONT)
        if not legend:
            ax.set_title(group[0].name, fontsize=_FONT)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=_FONT - 1)
    width = fig.get_figwidth()
    if legend:
        from matplotlib.lines import Line2D

        _legend(fig, [Line2D([], [], color=styles[n].colour, lw=styles[n].width, marker=styles[n].marker,
                             ms=styles[n].size, mfc="none", mew=1.5, label=n) for n in names], width)
    _title(fig, [title], width)
    return fig


def plot_curves(curves: Sequence[Curve], path: str | Path, *, title: str) -> Path:
    """Draw ``mpdp run``'s curves into ``path`` (.png, .pdf or .svg)."""
    _check_path(path)
    return _save(curves_figure(curves, title=title), path)
