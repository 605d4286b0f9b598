"""``--plot out.png``: curves of a run, and a reproduced table drawn against its paper numbers.

matplotlib is the optional ``plot`` extra; without it the commands say how to install it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import ReproRow, ReproTable
from mpdp.learning.spec.run import Curve

__all__ = ["check_plot_target", "plot_curves", "plot_table", "table_axis"]


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


def plot_curves(curves: Sequence[Curve], path: str | Path, *, title: str) -> Path:
    """One axis per distinct y label, every curve with that label on it."""
    out = _check_path(path)
    plt = _pyplot()
    by_label: dict[str, list[Curve]] = defaultdict(list)
    for curve in curves:
        by_label[curve.y_label].append(curve)
    fig, axes = plt.subplots(1, len(by_label), figsize=(5.5 * len(by_label), 4), squeeze=False)
    for ax, (label, group) in zip(axes[0], by_label.items(), strict=True):
        for curve in group:
            ax.plot(curve.x, curve.y, label=curve.name)
        ax.set_xlabel(group[0].x_label)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def table_axis(rows: Sequence[ReproRow]) -> str | None:
    """The numeric setting that varies most across rows (the x axis), or None when none varies."""
    candidates: dict[str, set[float]] = defaultdict(set)
    for row in rows:
        for key, value in row.setting.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                candidates[key].add(float(value))
    varying = {k: len(v) for k, v in candidates.items() if len(v) > 1}
    return max(varying, key=lambda k: varying[k]) if varying else None


def plot_table(result: ReproTable, path: str | Path) -> Path:
    """Ours (mean +- std) and the paper's numbers against the most varying numeric setting.

    Rows sharing the other settings and the metric form one series; a table with no numeric setting that
    varies is drawn as grouped points per row.
    """
    out = _check_path(path)
    plt = _pyplot()
    axis = table_axis(result.rows)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if axis is None:
        xs = range(len(result.rows))
        ax.errorbar(list(xs), [r.ours_mean for r in result.rows], yerr=[r.ours_std for r in result.rows],
                    fmt="o", capsize=3, label="ours")
        paper = [(float(i), r.paper) for i, r in enumerate(result.rows) if r.paper is not None]
        if paper:
            ax.plot([i for i, _ in paper], [p for _, p in paper], "x", color="black", label="paper")
        ax.set_xticks(list(xs), [", ".join(f"{k}={v}" for k, v in r.setting.items()) or r.metric
                                 for r in result.rows], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(", ".join(sorted({r.metric for r in result.rows})))
    else:
        series: dict[str, list[ReproRow]] = defaultdict(list)
        for row in result.rows:
            rest = ", ".join(f"{k}={v}" for k, v in row.setting.items() if k != axis)
            series[f"{row.metric}" + (f" ({rest})" if rest else "")].append(row)
        for name, rows in series.items():
            rows = sorted(rows, key=lambda r: float(r.setting.get(axis, 0.0)))
            x = [float(r.setting.get(axis, 0.0)) for r in rows]
            line = ax.errorbar(x, [r.ours_mean for r in rows], yerr=[r.ours_std for r in rows], marker="o",
                               capsize=3, label=f"ours: {name}")
            paper = [(xi, r.paper) for xi, r in zip(x, rows, strict=True) if r.paper is not None]
            if paper:
                ax.plot([p[0] for p in paper], [p[1] for p in paper], linestyle="--", marker="x",
                        color=line[0].get_color(), label=f"paper: {name}")
        values = sorted({float(r.setting[axis]) for r in result.rows if axis in r.setting})
        if values[0] > 0 and values[-1] / values[0] >= 20:
            ax.set_xscale("log")
        ax.set_xlabel(axis)
        ax.set_ylabel(", ".join(sorted({r.metric for r in result.rows})))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{result.id}: {result.title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
