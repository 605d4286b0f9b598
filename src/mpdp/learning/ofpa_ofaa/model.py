"""Paper 001 (Du, Li, Li): OFPA and OFAA logistic regression over horizontally partitioned parties.

Algorithms 2 and 3: each round every data owner minimises its perturbed local objective starting from the
current global parameters and uploads the minimiser; the server forms the record-weighted average through
secure aggregation (:mod:`mpdp.learning.ofpa_ofaa.rounds`, it never sees one
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
Du, Li, Li (paper 001, SecureComm 2018), Algorithms 1-3; Chaudhuri, Monteleoni, Sarwate, JMLR 2011.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
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
from mpdp.learning.ofpa_ofaa.parties import METHODS, DataOwner, Method, OwnerRows, average_spec, fixed_quadratic_mask
from mpdp.learning.ofpa_ofaa.rounds import SERVER, RoundsOutcome, order, run_rounds
from mpdp.learning.ofpa_ofaa.spec import OfaaSettings, OfpaSettings
from mpdp.randomness import RandomSource
from mpdp.runtime.steps import RunRecord, StepSession, communication, run_programs

__all__ = ["FitResult", "OfpaOfaaSettings", "PreparedParties", "calibrate", "fit", "one_hot_blocks",
           "owner_cost", "prepare_parties", "prepare_rows"]

FloatArray = npt.NDArray[np.float64]
#: the options' defaults, written once in the spec
_DEFAULTS = OfaaSettings()


@dataclass(frozen=True)
class OfpaOfaaSettings:
    """Parameters of one multiparty run (defaults: the spec's, :mod:`mpdp.learning.ofpa_ofaa.spec`).

    method: a :class:`~mpdp.learning.ofpa_ofaa.parties.Method` (OFPA, Algorithm 2; output, Algorithm 1; OFAA,
    Algorithm 3; none: no noise, the eps = inf reference). epsilon: total budget per owner (``inf`` only with none).
    lam: regulariser (mean form; OFPA may raise it, see :func:`~mpdp.dp.sensitivities.ofpa_ofaa.ofpa_plan`).
    eta, max_rounds: stopping rule. noise: ``"once"`` or ``"fresh"`` (module docstring). bound: public clip
    of the uploaded parameters for secure aggregation.
    """

    method: str = Method.OFPA.value
    epsilon: float = 0.8
    lam: float = _DEFAULTS.lam
    eta: float = _DEFAULTS.eta
    max_rounds: int = _DEFAULTS.max_rounds
    noise: str = _DEFAULTS.noise
    bound: float = 1e3

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(explain("method", self.method, f"one of {list(METHODS)}",
                                         f"pass method={Method.OFPA.value!r}"))
        eps = self.epsilon
        if not isinstance(eps, (int, float)) or math.isnan(eps) or eps <= 0:
            raise ParameterError(explain("epsilon", eps, "a number > 0", "pass e.g. epsilon=0.8"))
        if math.isinf(eps) != (self.method == Method.NONE):
            raise ParameterError(explain("epsilon", eps, "finite for a private method, inf for method='none'",
                                         "pass a finite epsilon, or method='none' for the non-private run"))
        for name, value in (("lam", self.lam), ("eta", self.eta), ("bound", self.bound)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ParameterError(explain(name, value, "a finite number > 0", f"pass e.g. {name}=1e-4"))
        if not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise ParameterError(explain("max_rounds", self.max_rounds, "an int >= 1", "pass e.g. max_rounds=10"))
        if self.noise not in ("once", "fresh"):
            raise ParameterError(explain("noise", self.noise, "'once' or 'fresh'", "pass noise='once'"))


    @classmethod
    def of(cls, options: OfaaSettings, epsilon: float) -> OfpaOfaaSettings:
        """The run's settings from an algorithm's options (:mod:`~mpdp.learning.ofpa_ofaa.spec`): OFPA's
        ``perturbation`` picks Algorithm 2 (``objective``) or 1 (``output``); OFAA is Algorithm 3."""
        method = Method.OFAA if not isinstance(options, OfpaSettings) else \
            Method.OFPA if options.perturbation == "objective" else Method.OUTPUT
        return cls(method=method, epsilon=epsilon, lam=options.lam, eta=options.eta, max_rounds=options.max_rounds,
                   noise=options.noise)

    @property
    def per_release(self) -> float:
        """Each release's epsilon: all of it with noise drawn once, ``epsilon / max_rounds`` with fresh noise."""
        return self.epsilon if self.noise == "once" else self.epsilon / self.max_rounds


def owner_cost(settings: OfpaOfaaSettings) -> PrivacyCost | None:
    """What every data owner's ledger is charged for a run, before any noise is drawn (None: not private).

    ``epsilon`` in both noise modes: noise drawn once is one release of ``epsilon`` repeated; fresh noise is at
    most ``max_rounds`` releases of ``epsilon / max_rounds`` (pure DP, basic composition). A run the stopping
    rule ends early is charged the whole bound all the same, since the charge comes before the first release.
    """
    if settings.method == Method.NONE:
        return None
    return PrivacyCost(epsilon=settings.epsilon, mechanism="laplace")


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
    if settings.method == Method.NONE:
        return settings.lam, 0.0, None
    if settings.method == Method.OFPA:
        plan = ofpa_plan(eps, n, settings.lam, prepared.row_l1)
        return plan.lam, plan.scale, None
    if settings.method == Method.OUTPUT:
        return settings.lam, output_laplace_scale(eps, n, settings.lam, dim), None
    budget = ofaa_budget(eps, prepared.row_l1, prepared.intercept, dim, dim * (dim + 1) // 2 - fixed)
    return settings.lam, budget.scale_quadratic, budget


def fit(parties: Sequence[Dataset] | PreparedParties, settings: OfpaOfaaSettings, *,
        rng: RandomSource | None = None, normalise: bool = False,
        ledgers: Mapping[str, BudgetSpender] | None = None) -> FitResult:
    """Run Algorithm 2 / 3 (or Algorithm 1 inside the loop) over ``parties`` (one Dataset each, or their
    :func:`prepare_parties`): every owner, the server and the aggregators run their rounds
    (:func:`~mpdp.learning.ofpa_ofaa.rounds.run_rounds`) over the in-memory transport.

    Each owner's cost (:func:`owner_cost`) is charged before any noise is drawn, on ``ledgers[owner]`` when
    given, else on a ledger of its own with the run's budget."""
    rng = rng if rng is not None else RandomSource.fresh()
    start = time.perf_counter()
    prepared = parties if isinstance(parties, PreparedParties) else prepare_parties(parties, normalise=normalise)
    dim = prepared.dim
    fixed = int(np.count_nonzero(prepared.rows[0].fixed))
    owners: dict[str, DataOwner] = {}
    for name, rows in zip(prepared.names, prepared.rows, strict=True):
        lam, scale, budget = calibrate(settings, settings.per_release, int(rows.X.shape[0]), prepared, fixed)
        owners[name] = DataOwner(name, rows, settings.method, lam, scale, rng.spawn(name), budget)
    cost = owner_cost(settings)
    spent = {name: math.inf for name in owners}
    if cost is not None:
        for name in owners:
            given = (ledgers or {}).get(name)
            ledger = given if given is not None else PrivacyLedger(epsilon=settings.epsilon, subject=f"party:{name}")
            ledger.spend(cost, label=f"{settings.method}/{name}")
            spent[name] = cost.epsilon
    count_bound = 1 << max(1, max(o.n for o in owners.values()).bit_length())
    spec = average_spec(sorted(owners), dim, bound=settings.bound, count_bound=count_bound)

    def program(name: str) -> Callable[[StepSession], tuple[RoundsOutcome, list[RunRecord]]]:
        def run(session: StepSession) -> tuple[RoundsOutcome, list[RunRecord]]:
            return (run_rounds(session, name, list(owners), spec, settings, rng, dim, owners.get(name)),
                    session.runs)

        return run

    done = run_programs({name: program(name) for name in order(list(owners))}, rng=rng)
    outcome = done[SERVER][0]
    runs = {name: records for name, (_, records) in done.items()}
    return FitResult(theta=outcome.theta, rounds=len(outcome.thetas), converged=outcome.converged,
                     epsilon_spent=spent, epsilon_per_release=settings.per_release,
                     scales={o.name: o.scale for o in owners.values()}, lams={o.name: o.lam for o in owners.values()},
                     communication=communication(runs), seconds=time.perf_counter() - start,
                     changes=outcome.changes,
                     scales_linear={o.name: o.budget.scale_linear for o in owners.values() if o.budget is not None})
