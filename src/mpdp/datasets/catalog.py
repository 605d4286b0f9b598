"""Datasets by name, as the CLI and notebooks ask for them: ``adult``, ``synthetic-*`` or a CSV path.

A spec is ``NAME`` or ``NAME:key=value,key=value`` (e.g. ``synthetic-linear:n=2000,d=50,s=0.5``,
``adult:target=hours-per-week``, or ``adult:n=5000`` for a uniform sample of 5000 records drawn with the run's
data seed); anything ending in ``.csv`` (or naming an existing file) is the user's own table, loaded by
:func:`mpdp.datasets.csvfile.load_csv` with ``label=`` and the type declarations.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mpdp.datasets.adult import Reporter, load_adult
from mpdp.datasets.csvfile import load_csv
from mpdp.datasets.dataset import Dataset
from mpdp.datasets.synthetic import logistic_with_optimum, mixed_tabular, sparse_linear_regression
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["DATASETS", "DatasetEntry", "is_csv_spec", "load_dataset", "parse_spec"]


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    summary: str
    params: Mapping[str, Any]  # accepted keys with their defaults
    load: Callable[[Mapping[str, Any], RandomSource, Mapping[str, Any]], Dataset]


def _adult(params: Mapping[str, Any], rng: RandomSource, ctx: Mapping[str, Any]) -> Dataset:
    split, n = params["split"], params["n"]
    if split not in ("all", "train", "test"):
        raise ParameterError(explain("adult split", split, "'all', 'train' or 'test'", "write e.g. adult:split=train"))
    if n < 0:
        raise ParameterError(explain("adult n", n, "0 (every record) or a positive record count",
                                     "write e.g. adult:n=5000"))
    data = load_adult(split, target=str(params["target"]), path=ctx.get("adult_path"),
                      cache_dir=ctx.get("cache_dir"), report=ctx.get("report"))
    if n == 0 or n >= data.n:
        return data
    return data.rows(np.sort(rng.permutation(data.n)[:n]))  # a uniform sample without replacement, in file order


def _linear(params: Mapping[str, Any], rng: RandomSource, _ctx: Mapping[str, Any]) -> Dataset:
    return sparse_linear_regression(int(params["n"]), int(params["d"]), float(params["s"]), rng=rng).data


def _logistic(params: Mapping[str, Any], rng: RandomSource, _ctx: Mapping[str, Any]) -> Dataset:
    return logistic_with_optimum(int(params["n"]), int(params["d"]), rng=rng).data


def _mixed(params: Mapping[str, Any], rng: RandomSource, _ctx: Mapping[str, Any]) -> Dataset:
    return mixed_tabular(int(params["n"]), numeric=int(params["numeric"]), categorical=int(params["categorical"]),
                         task=params["task"], rng=rng)


DATASETS: dict[str, DatasetEntry] = {
    entry.name: entry for entry in (
        DatasetEntry("adult", "UCI Adult census income: 45,222 records, 6 numeric + 8 categorical attributes",
                     {"split": "all", "target": "income", "n": 0}, _adult),
        DatasetEntry("synthetic-linear", "paper 000's sparse high-dimensional linear regression",
                     {"n": 80_000, "d": 800, "s": 0.1}, _linear),
        DatasetEntry("synthetic-logistic", "well-specified logistic data with a known optimum",
                     {"n": 10_000, "d": 10}, _logistic),
        DatasetEntry("synthetic-mixed", "numeric + categorical attributes with rule-based labels (trees)",
                     {"n": 5_000, "numeric": 4, "categorical": 3, "task": "classification"}, _mixed),
    )
}


def is_csv_spec(spec: str) -> bool:
    return spec.lower().endswith(".csv") or (spec not in DATASETS and Path(spec).expanduser().is_file())


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:k=v,k=v"`` -> ``(name, {k: v})`` with the registered defaults filled in and values typed."""
    name, _, rest = spec.partition(":")
    if name not in DATASETS:
        raise ParameterError(explain("dataset", spec, f"one of {sorted(DATASETS)} or a path to a .csv file",
                                     "run `mpdp datasets list`, or check the CSV path"))
    entry = DATASETS[name]
    params = dict(entry.params)
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in params:
            raise ParameterError(explain(f"{name} parameter", item, f"key=value with key in {sorted(params)}",
                                         f"write e.g. {name}:" + ",".join(f"{k}={v}" for k, v in params.items())))
        default = params[key]
        try:
            params[key] = type(default)(value) if not isinstance(default, str) else value
        except ValueError:
            raise ParameterError(explain(f"{name} parameter {key}", value, f"a {type(default).__name__}",
                                         f"write e.g. {key}={default}")) from None
    return name, params


def load_dataset(
    spec: str,
    *,
    rng: RandomSource | None = None,
    label: str | None = None,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    bounds: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence[str]] | None = None,
    positive: str | None = None,
    id_column: str | None = None,
    missing: Literal["drop", "error"] = "drop",
    adult_path: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    report: Reporter | None = None,
) -> Dataset:
    """Load ``spec`` (see the module docstring). ``label`` is required for a CSV and refused otherwise."""
    if is_csv_spec(spec):
        if label is None:
            raise ParameterError(explain("label", None, "the CSV column to predict", "pass --label COLUMN"))
        return load_csv(spec, label=label, categorical=categorical, numeric=numeric, bounds=bounds,
                        categories=categories, positive=positive, id_column=id_column, missing=missing)
    if (label is not None or categorical or numeric or bounds or categories or positive is not None
            or id_column is not None or missing != "drop"):
        raise ParameterError(explain("--label/--categorical/--numeric/--bounds/--categories/--positive/"
                                     "--id-column/--missing", spec,
                                     "a CSV dataset (these describe the user's own table)",
                                     "drop these options for built-in datasets"))
    name, params = parse_spec(spec)
    ctx = {"adult_path": adult_path, "cache_dir": cache_dir, "report": report}
    return DATASETS[name].load(params, resolve(rng).spawn(f"dataset/{name}"), ctx)
