"""Paper 001 (Du, Li, Li): OFPA and OFAA logistic regression over horizontally partitioned parties.

Algorithms 2 and 3: each round every data owner minimises its perturbed local objective starting from the
current global parameters and uploads the minimiser; the server forms the record-weighted average through
secure aggregation (:func:`~mpdp.learning.ofpa_ofaa.parties.secure_weighted_average`, it never sees one
owner's parameters); the loop stops when the change is below ``eta`` or after ``max_rounds``.

Inputs are put in the unit ball as the proofs assume: ``x = [x_raw, 1] / sqrt(B^2 + 1)`` with ``B`` the public
row-norm bound of the schema (the intercept is one more attribute, the last coordinate), so ``||x||_2 <= 1``
and, on a one-hot schema, ``||x||_1 <= sqrt(B^2 + 1)`` (:mod:`mpdp.dp.sensitivities.ofpa_ofaa`). Every owner
validates its own rows against the public schema (numeric entries in [-1, 1], one 1 per one-hot block),
because the sensitivities are suprema over that domain.

Privacy accounting (per owner; owners hold disjoint rows, so a record's guarantee is its owner's)
-------------------------------------------------------------------------------------------------
The paper prices one round. Every round releases a new minimiser computed from the same rows, so rounds
compose. Two modes:

* ``noise="once"`` (default): each owner draws its perturbation once and keeps it. With exact minimisation
  the local minimiser does not depend on the start point (the regularised objective is strictly convex), so
  every round releases the same ``eps``-DP value: the run costs ``epsilon`` in total, and the rounds only
  change the solver's warm start. (Newton stops at gradient norm 1e-9, a deterministic function of data,
  noise and the public start; like every objective-perturbation implementation we treat it as the exact
  minimiser.) The iteration then converges after two rounds.
* ``noise="fresh"``: new noise every round, as Algorithm 2 is written (``v_ik``). Each round gets
  ``epsilon / max_rounds`` and the run reports ``rounds_run * epsilon / max_rounds`` spent (basic
  composition of pure DP, recorded on a :class:`~mpdp.dp.accounting.ledger.PrivacyLedger` per owner that
  refuses to overspend).

Sensitivities and where the paper's are loose: :mod:`mpdp.dp.sensitivities.ofpa_ofaa`.

References
----------
Du, Li, Li, ``001_5578a5cbeaca8b44.txt``, Algorithms 1-3; Chaudhuri, Monteleoni, Sarwate, JMLR 2011.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.dp.sensitivities.ofpa_ofaa import (
    OfaaBudget,
    intercept_weight,
    ofaa_budget,
    ofpa_plan,
    output_laplace_scale,
    unit_ball_row_l1,
)
from mpdp.errors import DatasetError, DomainError, ParameterError, ShapeMismatchError, explain
from mpdp.learning.erm import misclassification, to_pm1
from mpdp.learning.ofpa_ofaa.parties import (
    METHODS,
    DataOwner,
    OwnerRows,
    fixed_quadratic_mask,
    secure_weighted_average,
)
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource

__all__ = ["FitResult", "OfpaOfaaSettings", "PreparedParties", "calibrate", "fit", "one_hot_blocks", "prepare_parties",
           "prepare_rows", "stop_after"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class OfpaOfaaSettings:
    """Parameters of one multiparty run.

    method: ``"ofpa"`` (Algorithm 2), ``"output"`` (Algorithm 1), ``"ofaa"`` (Algorithm 3) or ``"none"``
    (no noise; the eps = inf reference). epsilon: total budget per owner (``inf`` only with ``"none"``).
    lam: regulariser (mean form; OFPA may raise it, see :func:`~mpdp.dp.sensitivities.ofpa_ofaa.ofpa_plan`).
    eta, max_rounds: stopping rule. noise: ``"once"`` or ``"fresh"`` (module docstring). bound: public clip
    of the uploaded parameters for secure aggregation.
    """

    method: str = "ofpa"
    epsilon: float = 0.8
    lam: float = 1e-4
    eta: float = 1e-4
    max_rounds: int = 10
    noise: str = "once"
    bound: float = 1e3

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(explain("method", self.method, f"one of {METHODS}", "pass method='ofpa'"))
        eps = self.epsilon
        if not isinstance(eps, (int, float)) or math.isnan(eps) or eps <= 0:
            raise ParameterError(explain("epsilon", eps, "a number > 0", "pass e.g. epsilon=0.8"))
        if math.isinf(eps) != (self.method == "none"):
            raise ParameterError(explain("epsilon", eps, "finite for a private method, inf for method='none'",
                                         "pass a finite epsilon, or method='none' for the non-private run"))
        for name, value in (("lam", self.lam), ("eta", self.eta), ("bound", self.bound)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ParameterError(explain(name, value, "a finite number > 0", f"pass e.g. {name}=1e-4"))
        if not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise ParameterError(explain("max_rounds", self.max_rounds, "an int >= 1", "pass e.g. max_rounds=10"))
        if self.noise not in ("once", "fresh"):
            raise ParameterError(explain("noise", self.noise, "'once' or 'fresh'", "pass noise='once'"))


@dataclass
class FitResult:
    """The global parameters, rounds run, privacy spent per owner and communication."""

    theta: FloatArray
    rounds: int
    converged: bool
    epsilon_spent: dict[str, float]
    epsilon_per_release: float
    scales: dict[str, float]
    lams: dict[str, float]
    communication: dict[str, int]
    seconds: float
    changes: list[float] = field(default_factory=list)
    scales_linear: dict[str, float] = field(default_factory=dict)

    def misclassification(self, X: FloatArray, y: FloatArray) -> float:
        """Misclassification of the global model on unit-ball rows ``X`` (from :func:`prepare_rows`)."""
        return misclassification(self.theta, X, to_pm1(y))


def prepare_rows(X: npt.ArrayLike, row_bound: float, *, normalise: bool = False) -> FloatArray:
    """``[X, 1] / sqrt(row_bound^2 + 1)``: unit-ball rows with the intercept folded in as one more attribute.

    A row whose norm exceeds ``row_bound`` raises :class:`~mpdp.errors.DomainError` unless ``normalise``, which
    projects such rows onto the ball with a ``UserWarning`` (a per-record map, so the guarantee holds).
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeMismatchError(explain("X", arr.shape, "a 2-d array (n, d)", "pass one row per record"))
    if not np.all(np.isfinite(arr)):
        raise DomainError(explain("X", "non-finite values", "finite features", "impute or drop missing values"))
    h = intercept_weight(row_bound)
    norms = np.sqrt(np.einsum("ij,ij->i", arr, arr)) / row_bound
    if norms.size and norms.max() > 1.0 + 1e-9:
        if not normalise:
            worst = int(np.argmax(norms))
            raise DomainError(explain(f"row {worst} norm / row_bound", float(norms[worst]), "<= 1",
                                      "scale rows by a public bound, or pass normalise=True to project them"))
        warnings.warn(f"{int(np.sum(norms > 1))} rows outside the unit ball were projected onto it", UserWarning,
                      stacklevel=2)
        arr = arr / np.maximum(norms, 1.0)[:, None]
    out: FloatArray = np.empty((arr.shape[0], arr.shape[1] + 1))
    out[:, :-1] = arr * h
    out[:, -1] = h
    return out


@dataclass(frozen=True)
class PreparedParties:
    """The owners' validated unit-ball rows and the public quantities the sensitivities need.

    Build with :func:`prepare_parties`; pass to :func:`fit` in place of the Datasets to run several settings
    (budgets, methods) on the same partition without re-encoding or recomputing sufficient statistics.
    """

    names: tuple[str, ...]
    rows: tuple[OwnerRows, ...]
    row_bound: float
    row_l1: float
    intercept: float

    @property
    def dim(self) -> int:
        return int(self.rows[0].X.shape[1])

    @property
    def counts(self) -> dict[str, int]:
        return {k: int(r.X.shape[0]) for k, r in zip(self.names, self.rows, strict=True)}


def _check_parties(parties: Sequence[Dataset]) -> float:
    """Validate the parties against the first one's schema; returns the public row-norm bound."""
    if not parties:
        raise ParameterError(explain("parties", 0, "one or more parties", "pass each party's Dataset"))
    ref = parties[0]
    for k, p in enumerate(parties):
        if p.n == 0:
            raise DatasetError(explain(f"party {k}", "0 records", "at least one record",
                                       "drop the empty party or give it rows"))
        if p.d != ref.d or p.feature_names != ref.feature_names:
            raise ShapeMismatchError(explain(f"party {k} features", f"{p.d} columns", f"the {ref.d} of party 0",
                                             "encode every party with the same schema (same columns, same order)"))
        if p.attributes != ref.attributes or p.encoded_columns != ref.encoded_columns:
            raise ShapeMismatchError(explain(f"party {k} schema", p.attribute_names,
                                             f"the attributes of party 0: {ref.attribute_names}",
                                             "encode every party with the same schema (same attributes)"))
    # each owner checks its own one-hot blocks (row_norm_bound raises on a block that is not one-hot)
    bounds = {p.row_norm_bound for p in parties}
    if len(bounds) != 1:  # pragma: no cover - same schema and validated blocks give the same bound
        raise ShapeMismatchError(explain("row norm bounds", sorted(bounds), "one public bound",
                                         "encode every party with the same schema"))
    return bounds.pop()


def one_hot_blocks(data: Dataset) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(cols) for attr, cols in zip(data.attributes, data.encoded_columns, strict=True)
                 if attr.kind == "categorical" and len(cols) > 1)


def prepare_parties(parties: Sequence[Dataset], *, normalise: bool = False) -> PreparedParties:
    """Validate every party against the public schema and put its rows in the unit ball (:func:`prepare_rows`)."""
    row_bound = _check_parties(parties)
    dim = parties[0].d + 1
    fixed = fixed_quadratic_mask(dim, one_hot_blocks(parties[0]), dim - 1)
    rows = tuple(OwnerRows(prepare_rows(p.X, row_bound, normalise=normalise), to_pm1(p.y), fixed) for p in parties)
    return PreparedParties(names=tuple(f"party{k}" for k in range(len(parties))), rows=rows, row_bound=row_bound,
                           row_l1=unit_ball_row_l1(dim, row_bound), intercept=intercept_weight(row_bound))


def calibrate(settings: OfpaOfaaSettings, eps: float, n: int, prepared: PreparedParties,
               fixed: int) -> tuple[float, float, OfaaBudget | None]:
    """(lam, Laplace scale, OFAA budget) of one release of ``eps`` by an owner with ``n`` records (``prepared``
    supplies the public dimension, row-L1 bound and intercept weight)."""
    dim = prepared.dim
    if settings.method == "none":
        return settings.lam, 0.0, None
    if settings.method == "ofpa":
        plan = ofpa_plan(eps, n, settings.lam, prepared.row_l1)
        return plan.lam, plan.scale, None
    if settings.method == "output":
        return settings.lam, output_laplace_scale(eps, n, settings.lam, dim), None
    budget = ofaa_budget(eps, prepared.row_l1, prepared.intercept, dim, dim * (dim + 1) // 2 - fixed)
    return settings.lam, budget.scale_quadratic, budget


def fit(parties: Sequence[Dataset] | PreparedParties, settings: OfpaOfaaSettings, *,
        rng: RandomSource | None = None, normalise: bool = False, progress: Progress = SILENT) -> FitResult:
    """Run Algorithm 2 / 3 (or Algorithm 1 inside the loop) over ``parties`` (one Dataset each, or their
    :func:`prepare_parties`); ``progress`` shows a bar over the rounds."""
    rng = rng if rng is not None else RandomSource.fresh()
    start = time.perf_counter()
    prepared = parties if isinstance(parties, PreparedParties) else prepare_parties(parties, normalise=normalise)
    dim = prepared.dim
    per_release = settings.epsilon if settings.noise == "once" else settings.epsilon / settings.max_rounds
    owners: list[DataOwner] = []
    ledgers: dict[str, PrivacyLedger] = {}
    fixed = int(np.count_nonzero(prepared.rows[0].fixed))
    for name, rows in zip(prepared.names, prepared.rows, strict=True):
        lam, scale, budget = calibrate(settings, per_release, int(rows.X.shape[0]), prepared, fixed)
        owners.append(DataOwner(name, rows, settings.method, lam, scale, rng.spawn(name), budget))
        if settings.method != "none":
            ledgers[name] = PrivacyLedger(epsilon=settings.epsilon, subject=f"party:{name}")
    counts = {o.name: o.n for o in owners}
    count_bound = 1 << max(1, max(counts.values()).bit_length())
    theta = np.zeros(dim)
    traffic = {"bytes": 0, "messages": 0, "rounds": 0}
    changes: list[float] = []
    converged = False
    rounds = 0
    for rnd in progress.iterate(range(settings.max_rounds), f"{settings.method} rounds", unit="round"):
        uploads = {}
        for o in owners:
            if settings.method != "none" and (rnd == 0 or settings.noise == "fresh"):
                ledgers[o.name].spend(PrivacyCost(epsilon=per_release, mechanism="laplace"), label=f"round {rnd}")
                o.draw_noise(f"round/{rnd}")
            uploads[o.name] = o.local_fit(theta)
        new, comm = secure_weighted_average(uploads, counts, bound=settings.bound, count_bound=count_bound,
                                            rng=rng.spawn(f"aggregate/{rnd}"))
        for key in traffic:
            traffic[key] += comm[key]
        change = float(np.linalg.norm(new - theta))
        changes.append(change)
        theta = new
        rounds = rnd + 1
        if stop_after(rnd, change, settings):
            converged = True
            break
    spent = {k: float(led.spent.epsilon) for k, led in ledgers.items()}
    if settings.method == "none":
        spent = {o.name: math.inf for o in owners}
    return FitResult(theta=theta, rounds=rounds, converged=converged, epsilon_spent=spent,
                     epsilon_per_release=per_release, scales={o.name: o.scale for o in owners},
                     lams={o.name: o.lam for o in owners}, communication=traffic,
                     seconds=time.perf_counter() - start, changes=changes,
                     scales_linear={o.name: o.budget.scale_linear for o in owners if o.budget is not None})


def stop_after(rnd: int, change: float, settings: OfpaOfaaSettings) -> bool:
    """The stopping rule: round ``rnd`` (from 0) moved the global parameters by ``change`` < ``eta`` (not the
    first round)."""
    return rnd > 0 and change < settings.eta


def options_from(raw: Any, method: str, epsilon: float) -> OfpaOfaaSettings:
    """``--option`` keys of ``mpdp run ofpa|ofaa`` -> settings (unknown keys refused)."""
    known = {"lam", "eta", "max_rounds", "noise", "perturbation"}
    opts = dict(raw or {})
    unknown = set(opts) - known
    if unknown:
        raise ParameterError(explain("options", sorted(unknown), f"keys among {sorted(known)}",
                                     "e.g. --option noise=fresh --option max_rounds=5"))
    if method == "ofpa":
        pert = opts.get("perturbation", "objective")
        if pert not in ("objective", "output"):
            raise ParameterError(explain("perturbation", pert, "'objective' or 'output'",
                                         "pass perturbation=output for Algorithm 1"))
        method = "ofpa" if pert == "objective" else "output"
    elif "perturbation" in opts:
        raise ParameterError(explain("perturbation", opts["perturbation"], "no perturbation option for ofaa",
                                     "use `mpdp run ofpa --option perturbation=output`"))
    return OfpaOfaaSettings(method=method, epsilon=epsilon, lam=float(opts.get("lam", 1e-4)),
                            eta=float(opts.get("eta", 1e-4)), max_rounds=int(opts.get("max_rounds", 10)),
                            noise=str(opts.get("noise", "once")))

