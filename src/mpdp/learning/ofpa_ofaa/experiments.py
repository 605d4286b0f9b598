"""Paper 001's reproductions: ``mpdp reproduce 001-fig2|fig3|fig4``.

Figures 2-4 as tables of misclassification (mean, std over repetitions): three parties holding 40/30/10% of
the records and 20% test, LR_NoPrivacy (method none, the same multiparty loop without noise; with
exact local minimisers this equals the pooled regularised fit's weighted average), OFPA and OFAA.

* ``001-fig2``: eps in {0.1, 0.2, 0.4, 0.8, 1.6, 3.2}.
* ``001-fig3``: cardinality, sampling rates 0.2 .. 1 at eps = 0.8.
* ``001-fig4``: dimensionality, the first k attributes of Adult at eps = 0.8.

Bank Marketing and Default of Credit Card Clients are not available here: every table uses Adult instead, so
the paper's numbers (read off plots, not tabulated) are not printed beside ours. Noise is drawn once per owner
(``noise="once"``), so each run costs exactly eps per owner.

Results (``OPENBLAS_NUM_THREADS=1 mpdp reproduce 001-fig2 --seed 2026``, full Adult, 10 repetitions; mean
misclassification, std over repetitions in parentheses; LR_NoPrivacy 0.1621 (0.0027)):

=====  ===============  ===============
eps    OFPA             OFAA
=====  ===============  ===============
0.1    0.2454 (0.0174)  0.2459 (0.0039)
0.2    0.2217 (0.0135)  0.2322 (0.0136)
0.4    0.2011 (0.0113)  0.1982 (0.0110)
0.8    0.1789 (0.0045)  0.1785 (0.0045)
1.6    0.1692 (0.0041)  0.1736 (0.0034)
3.2    0.1620 (0.0033)  0.1699 (0.0030)
=====  ===============  ===============

At eps = 0.8 both methods are within 2 points of LR_NoPrivacy (+1.7 and +1.6; with ``--seed 7``: +1.6 and
+1.7). The margin is small: the notebook's seed puts OFAA's 10-repetition mean at +2.2, and 001-fig4's
14-attribute row at +2.0. The run took 24 s of CPU time (185 s wall on the 2-core machine shared at a load
average of about 30; 143 s at about 19).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.datasets import load_dataset, train_test_split
from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import horizontal_by_fractions
from mpdp.errors import ParameterError, explain
from mpdp.learning.ofpa_ofaa.model import OfpaOfaaSettings, PreparedParties, fit, prepare_parties, prepare_rows
from mpdp.learning.ofpa_ofaa.parties import Method
from mpdp.learning.registry import Reproduction, ReproFigure, ReproOptions, ReproRow, ReproTable
from mpdp.randomness import RandomSource

__all__ = ["REPRODUCTIONS", "first_attributes"]

FloatArray = npt.NDArray[np.float64]
EPSILONS = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
PRIVATE = (Method.OFPA, Method.OFAA)
LABELS: dict[str, str] = {Method.NONE: "LR_NoPrivacy", Method.OFPA: "OFPA", Method.OFAA: "OFAA"}
NOTE_DATA = ("Bank Marketing and Default of Credit Card Clients are not available: Adult is used instead, so "
             "the paper's curves are not comparable and are not shown beside ours.")
NOTE_SOUND = ("Sound sensitivities (mpdp.dp.sensitivities.ofpa_ofaa): OFPA uses l1 sensitivity 2*row_l1 and "
              "pays the Jacobian term of Chaudhuri et al. (regulariser added), not the paper's Lap(4/eps); OFAA "
              "uses per-degree l1 sensitivities row_l1 and (row_l1^2 - h^2)/4 (row_l1 = sqrt(15) on Adult's one-hot "
              "schema), not 2(J+1)max|lambda|, a variance-minimising budget split between the degrees, no noise "
              "on coefficients fixed by the schema, and a ridge of the order of the noise.")


def first_attributes(data: Dataset, k: int) -> Dataset:
    """``data`` restricted to its first ``k`` attributes (all their encoded columns), schema kept."""
    if not 1 <= k <= len(data.attributes):
        raise ParameterError(explain("k", k, f"1 .. {len(data.attributes)}", "choose fewer attributes"))
    cols: list[int] = []
    remapped = []
    for c in data.encoded_columns[:k]:
        remapped.append(tuple(range(len(cols), len(cols) + len(c))))
        cols.extend(c)
    return Dataset(name=f"{data.name}[{k} attributes]", X=data.X[:, cols], y=data.y,
                   feature_names=tuple(data.feature_names[c] for c in cols), task=data.task,
                   attributes=data.attributes[:k], values=None if data.values is None else data.values[:, :k],
                   encoded_columns=tuple(remapped), label_name=data.label_name)


def _prepare(data: Dataset, rng: RandomSource) -> tuple[PreparedParties, FloatArray, FloatArray]:
    """Split 40/30/10% + 20% test once; the owners' rows and statistics are reused for every budget/method."""
    part = horizontal_by_fractions(data, (0.4, 0.3, 0.1), test=0.2, rng=rng.spawn("split"))
    prepared = prepare_parties(part.party_data())
    test = part.test
    if test is None:  # pragma: no cover - test=0.2 always gives a test set
        raise ParameterError("no test set")
    return prepared, prepare_rows(test.X, prepared.row_bound), test.y


def _one(prepared: PreparedParties, Xt: FloatArray, yt: FloatArray, method: str, eps: float,
         rng: RandomSource) -> float:
    settings = OfpaOfaaSettings(method=method, epsilon=eps)  # the spec's default regulariser
    return fit(prepared, settings, rng=rng.spawn(f"{method}/{eps}")).misclassification(Xt, yt)


def _reps(options: ReproOptions) -> int:
    reps = options.repetitions if options.repetitions is not None else (2 if options.quick else 10)
    if reps < 1:
        raise ParameterError(explain("repetitions", reps, "an int >= 1", "pass e.g. --repetitions 10"))
    return reps


def _adult(options: ReproOptions) -> Dataset:
    data = load_dataset("adult")
    if options.quick:  # a stratified fifth of the records: seconds instead of minutes
        data, _ = train_test_split(data, 0.8, rng=options.rng.spawn("quick-subsample"))
    return data


def _table(table_id: str, title: str, settings: list[tuple[dict[str, Any], Callable[[Dataset, RandomSource],
                                                                                   Dataset], float]],
           ) -> Callable[[ReproOptions], ReproTable]:
    def run(options: ReproOptions) -> ReproTable:
        start = time.perf_counter()
        data = _adult(options)
        reps = _reps(options)
        plan: list[tuple[dict[str, Any], float, str]] = []
        previous: dict[str, Any] | None = None
        for setting, _, eps in settings:
            methods = PRIVATE if setting == previous else (Method.NONE, *PRIVATE)
            previous = setting
            plan.extend((setting, eps, m) for m in methods)
        views = {repr(setting): view for setting, view, _ in settings}
        values: dict[int, list[float]] = {k: [] for k in range(len(plan))}
        for rep in range(reps):  # one partition per (setting, rep), shared by its budgets and methods
            current: tuple[str, tuple[PreparedParties, FloatArray, FloatArray]] | None = None
            for k, (setting, eps, method) in enumerate(plan):
                rng = options.rng.spawn(f"{setting}/rep/{rep}")
                if current is None or current[0] != repr(setting):
                    current = (repr(setting), _prepare(views[repr(setting)](data, rng.spawn("view")), rng))
                prepared, Xt, yt = current[1]
                values[k].append(_one(prepared, Xt, yt, method, math.inf if method == Method.NONE else eps, rng))
        rows: list[ReproRow] = []
        for k, (setting, eps, method) in enumerate(plan):
            label = LABELS[method]
            row_setting = {"method": label, **setting, "epsilon": None if method == Method.NONE else eps}
            vals = values[k]
            rows.append(ReproRow(row_setting, "misclassification", None, float(np.mean(vals)), float(np.std(vals)),
                                 reps))
        notes = [NOTE_DATA, NOTE_SOUND, "Three parties hold 40/30/10% of the records, 20% test; noise drawn once "
                 "per owner, so each run spends exactly eps per owner (a record's guarantee)."]
        if options.quick:
            notes.append("quick mode: a stratified 20% subsample of Adult and 2 repetitions")
        return ReproTable(table_id, title, rows, notes, time.perf_counter() - start)

    return run


def _whole(data: Dataset, rng: RandomSource) -> Dataset:
    return data


def _sample(rate: float) -> Callable[[Dataset, RandomSource], Dataset]:
    def view(data: Dataset, rng: RandomSource) -> Dataset:
        if rate >= 1.0:
            return data
        return train_test_split(data, 1.0 - rate, rng=rng)[0]

    return view


def _attrs(k: int) -> Callable[[Dataset, RandomSource], Dataset]:
    return lambda data, rng: first_attributes(data, k)


_FIG2 = "Paper 001 Figure 2: misclassification vs eps on Adult"
_FIG3 = "Paper 001 Figure 3: misclassification vs cardinality (eps = 0.8) on Adult"
_FIG4 = "Paper 001 Figure 4: misclassification vs dimensionality (eps = 0.8) on Adult"

REPRODUCTIONS: tuple[Reproduction, ...] = (
    Reproduction("001-fig2", _FIG2, _table("001-fig2", _FIG2, [({}, _whole, e) for e in EPSILONS]),
                 ReproFigure(x="epsilon", series=("method",))),
    Reproduction("001-fig3", _FIG3, _table("001-fig3", _FIG3, [({"sampling_rate": r}, _sample(r), 0.8)
                                                                for r in (0.2, 0.4, 0.6, 0.8, 1.0)]),
                 ReproFigure(x="sampling_rate", series=("method",),
                             labels={"sampling_rate": "sampling rate (fraction of Adult's records)"})),
    Reproduction("001-fig4", _FIG4, _table("001-fig4", _FIG4, [({"attributes": k}, _attrs(k), 0.8)
                                                                for k in (4, 6, 8, 10, 12, 14)]),
                 ReproFigure(x="attributes", series=("method",),
                             labels={"attributes": "attributes used (the first k of Adult's 14)"})),
)
