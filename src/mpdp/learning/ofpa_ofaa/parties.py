"""Paper 001's data owners: each holds its own rows and perturbs and minimises its own local objective.

A :class:`DataOwner` sees only its records and the global parameters the server broadcasts. Per round it
returns its local minimiser; the minimisers reach the server only through secure aggregation
(:mod:`mpdp.learning.ofpa_ofaa.rounds`), so the server learns the record-weighted average and nothing else.

Local objectives (mean form, ``x`` already in the unit ball with the intercept folded in):

* ``ofpa``: ``mean_i log(1 + e^{-y_i w.x_i}) + lam/2 ||w||^2 + (v / n)^T w``, ``v_j ~ Lap(scale)``
  (:func:`mpdp.dp.sensitivities.ofpa_ofaa.ofpa_plan`), minimised by damped Newton from the global parameters.
* ``output``: the unperturbed regularised minimiser plus ``Lap(scale)`` per coordinate (Algorithm 1).
* ``ofaa``: the order-2 Taylor polynomial ``sum_i [ln 2 - (y_i/2) w.x_i + (w.x_i)^2 / 8]`` with its degree-1
  and degree-2 coefficients released by the Laplace mechanism, each degree with its own budget and scale
  (Algorithm 3; :func:`mpdp.dp.sensitivities.ofpa_ofaa.ofaa_budget`). Degree-2 coefficients that are the same
  for every row of the declared domain (two columns of one one-hot block: 0; the intercept's square) are
  released exactly, without noise (:func:`fixed_quadratic_mask`). The noisy quadratic form is symmetrised and
  its eigenvalues clipped at 0 (post-processing, as in Zhang et al. 2012), then the ridge
  ``n lam + ofaa_ridge(scale, dim)`` is added so the minimiser exists, is unique and is not dominated by the
  noise's spurious curvature; it is found in closed form.

Noise is drawn exactly on a grid (:mod:`mpdp.dp.grid`, :class:`mpdp.dp.mechanisms.laplace.LaplaceMechanism`),
from the owner's own ``rng``. An owner's sufficient statistics (``X^T X``, ``X^T y``) are cached on its
:class:`OwnerRows`, so runs at several budgets on the same rows compute them once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.grid import default_grid_bits, laplace_on_grid, snap_to_grid
from mpdp.dp.mechanisms.laplace import LaplaceMechanism
from mpdp.dp.samplers import discrete_laplace
from mpdp.dp.sensitivities.ofpa_ofaa import OfaaBudget
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.protocols.aggregation import AggregationSpec
from mpdp.randomness import RandomSource

__all__ = [
    "METHODS",
    "OFAA_RIDGE_KAPPA",
    "DataOwner",
    "Method",
    "OwnerRows",
    "average_spec",
    "fixed_quadratic_mask",
    "newton_logistic",
    "ofaa_ridge",
    "upload",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
class Method(StrEnum):
    """Paper 001's perturbations: OFPA (Algorithm 2), output perturbation (Algorithm 1), OFAA (Algorithm 3), and
    none (the same rounds without noise: the non-private reference)."""

    OFPA = "ofpa"
    OUTPUT = "output"
    OFAA = "ofaa"
    NONE = "none"


METHODS = tuple(Method)

#: Ridge of OFAA's noisy quadratic form, in units of ``scale * sqrt(dim)`` (see :func:`ofaa_ridge`).
OFAA_RIDGE_KAPPA = 0.5


def ofaa_ridge(scale: float, dim: int, kappa: float = OFAA_RIDGE_KAPPA) -> float:
    """Ridge (sum form) added to OFAA's noisy Hessian ``2 Q``: ``kappa * scale * sqrt(dim)``.

    The symmetrised Laplace noise of ``2 Q`` has entries of standard deviation about ``sqrt(2) scale`` and a
    spectral norm of order ``scale sqrt(dim)``; after clipping its negative eigenvalues, the positive ones
    remain as spurious curvature in directions the data barely constrain. A ridge of that order (AdaSSP, Wang
    2018) damps them. It depends on public numbers only (the noise scale and ``dim``), so it costs no budget
    and keeps the solution invariant to rescaling the features. ``kappa = 0.5`` was chosen from
    {0.25, 0.5, 0.75, 1, 2} on Adult runs (a public tuning choice, reported as such, like the paper's settings).
    """
    return kappa * scale * math.sqrt(dim)


def fixed_quadratic_mask(dim: int, blocks: Sequence[Sequence[int]], intercept: int | None) -> BoolArray:
    """Which degree-2 coefficients (``np.triu_indices(dim)`` order) are the same for every row of the domain.

    ``x_a x_b = 0`` for two different columns of one one-hot block (``blocks``; rows are validated to hold at
    most one 1 per block) and ``x_c^2 = h^2`` for the constant intercept column ``intercept``. Such
    coefficients carry no information about any record: they are released exactly and get no noise.
    """
    owner = np.full(dim, -1)
    for k, block in enumerate(blocks):
        cols = list(block)
        if any(not 0 <= c < dim for c in cols) or np.any(owner[cols] >= 0):
            raise ShapeMismatchError(explain("blocks", [list(b) for b in blocks],
                                             f"disjoint column sets within 0 .. {dim - 1}",
                                             "pass the one-hot blocks of the public schema"))
        owner[cols] = k
    iu, ju = np.triu_indices(dim)
    fixed: BoolArray = (owner[iu] >= 0) & (owner[iu] == owner[ju]) & (iu != ju)
    if intercept is not None:
        fixed |= (iu == intercept) & (ju == intercept)
    return fixed


@dataclass(frozen=True)
class OwnerRows:
    """One owner's prepared rows (unit ball, intercept folded in), labels in {-1, +1}, and the public mask of
    its data-independent degree-2 coefficients. ``gram()`` and ``xty()`` are computed once and cached."""

    X: FloatArray
    y: FloatArray
    fixed: BoolArray
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        n, dim = self.X.shape
        if self.y.shape != (n,):
            raise ShapeMismatchError(explain("y", self.y.shape, f"({n},)", "pass one label per row"))
        if self.fixed.shape != (dim * (dim + 1) // 2,):
            raise ShapeMismatchError(explain("fixed", self.fixed.shape, f"({dim * (dim + 1) // 2},)",
                                             "pass fixed_quadratic_mask(dim, blocks, intercept)"))

    def gram(self) -> FloatArray:
        if "gram" not in self._cache:
            self._cache["gram"] = self.X.T @ self.X
        gram: FloatArray = self._cache["gram"]
        return gram

    def xty(self) -> FloatArray:
        if "xty" not in self._cache:
            self._cache["xty"] = self.X.T @ self.y
        xty: FloatArray = self._cache["xty"]
        return xty

    def newton_views(self) -> tuple[FloatArray, npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """``(X^T, X as float32, X^T as float32)``, contiguous, for :func:`newton_logistic`."""
        if "xt" not in self._cache:
            x32 = self.X.astype(np.float32)
            self._cache["xt"] = np.ascontiguousarray(self.X.T)
            self._cache["x32"] = x32
            self._cache["xt32"] = np.ascontiguousarray(x32.T)
        return self._cache["xt"], self._cache["x32"], self._cache["xt32"]


@dataclass
class DataOwner:
    """One party of paper 001: its :class:`OwnerRows`, its method and noise calibration, its own ``rng``.

    ``scale`` is the Laplace scale of the perturbation (OFPA's linear term, Algorithm 1's output noise, or
    OFAA's degree-2 coefficients); OFAA also needs its ``budget`` (per-degree epsilons and scales).
    """

    name: str
    rows: OwnerRows
    method: str
    lam: float
    scale: float
    rng: RandomSource
    budget: OfaaBudget | None = None
    _noise: FloatArray | None = field(default=None, init=False, repr=False)
    _fixed: tuple[FloatArray, FloatArray] | None = field(default=None, init=False, repr=False)
    _solution: FloatArray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(explain("method", self.method, f"one of {list(METHODS)}",
                                         f"pass method={Method.OFPA.value!r}"))
        if self.method == Method.OFAA and self.budget is None:
            raise ParameterError(explain("budget", None, "an OfaaBudget for OFAA",
                                         "pass budget=ofaa_budget(eps, row_l1, intercept, m1, m2)"))

    @property
    def n(self) -> int:
        return int(self.rows.X.shape[0])

    @property
    def dim(self) -> int:
        return int(self.rows.X.shape[1])

    def draw_noise(self, label: str) -> None:
        """Draw this release's noise (once per run, or once per round with fresh noise)."""
        self._solution = None
        self._fixed = None
        self._noise = None
        if self.method == Method.NONE:
            return
        rng = self.rng.spawn(label)
        if self.method == Method.OFAA:
            self._fixed = self._ofaa_release(rng)
            return
        self._noise = laplace_on_grid(self.scale, self.dim, grid_bits=default_grid_bits(self.scale), rng=rng)

    def _ofaa_release(self, rng: RandomSource) -> tuple[FloatArray, FloatArray]:
        """The released degree-1 coefficients and the PSD-projected degree-2 form ``Q``: the polynomial
        ``n ln 2 + lin^T w + w^T Q w`` (the projection is post-processing of :meth:`ofaa_coefficients`)."""
        lin, coef = self.ofaa_coefficients(rng)
        d = self.dim
        q = np.zeros((d, d))
        q[np.triu_indices(d)] = coef
        q = (q + q.T) / 2.0  # off-diagonal coefficient c_ab split evenly between Q_ab and Q_ba; diagonal kept
        vals, vecs = np.linalg.eigh(q)
        return lin, (vecs * np.clip(vals, 0.0, None)) @ vecs.T

    def ofaa_coefficients(self, rng: RandomSource) -> tuple[FloatArray, FloatArray]:
        """One OFAA release: the degree-1 coefficients and the degree-2 coefficients of ``w_a w_b`` (a <= b,
        ``np.triu_indices`` order), each degree by the Laplace mechanism with its sensitivity
        ``Delta_j = scale_j eps_j`` and budget ``eps_j``; the coefficients fixed by the domain exactly."""
        budget = self.budget
        if budget is None:  # pragma: no cover - checked in __post_init__
            raise ParameterError("OFAA owner without a budget")
        iu = np.triu_indices(self.dim)
        quad = self.rows.gram() / 8.0
        coef = np.where(iu[0] == iu[1], quad[iu], 2.0 * quad[iu])
        lin = -0.5 * self.rows.xty()
        free = ~self.rows.fixed
        lin = _laplace_release(lin, budget.scale_linear * budget.eps_linear, budget.eps_linear, rng.spawn("degree1"))
        if np.any(free) and budget.eps_quadratic > 0:
            coef[free] = _laplace_release(coef[free], budget.scale_quadratic * budget.eps_quadratic,
                                          budget.eps_quadratic, rng.spawn("degree2"))
        return lin, coef

    def local_fit(self, start: FloatArray) -> FloatArray:
        """Minimise the (perturbed) local objective from the global parameters ``start``.

        The objective is strictly convex, so its minimiser does not depend on ``start``: while the noise is
        unchanged (``noise="once"``) the owner reuses its previous minimiser instead of recomputing it.
        """
        if self._solution is not None:
            return self._solution
        if self.method == Method.OFAA:
            if self._fixed is None:  # pragma: no cover - fit draws before the first local_fit
                raise ParameterError("OFAA owner used before draw_noise")
            lin, quad = self._fixed
            # minimise w^T Q w + lin^T w + (ridge / 2) ||w||^2  ->  (2 Q + ridge I) w = -lin
            ridge = self.n * self.lam + ofaa_ridge(self.scale, self.dim)
            self._solution = np.asarray(np.linalg.solve(2.0 * quad + ridge * np.eye(self.dim), -lin))
            return self._solution
        linear = None
        if self.method == Method.OFPA and self._noise is not None:
            linear = self._noise / self.n
        theta = newton_logistic(self.rows.X, self.rows.y, self.lam, linear, start, views=self.rows.newton_views())
        if self.method == Method.OUTPUT and self._noise is not None:
            theta = theta + self._noise
        self._solution = theta
        return theta


def _laplace_release(values: FloatArray, sensitivity: float, eps: float, rng: RandomSource) -> FloatArray:
    """``values`` snapped to the grid plus exact discrete Laplace noise calibrated to the grid-inflated l1
    sensitivity: :meth:`LaplaceMechanism.release <mpdp.dp.mechanisms.laplace.LaplaceMechanism.release>` without
    its ledger (:func:`~mpdp.learning.ofpa_ofaa.model.fit` charges the owner's ledger for the whole release)."""
    mech = LaplaceMechanism(epsilon=eps, sensitivity=sensitivity)
    k = int(mech.grid_bits or 0)
    units = snap_to_grid(values, k)
    noise = np.asarray(discrete_laplace(mech.grid_scale(max(units.size, 1)), units.shape, rng=rng))
    out: FloatArray = np.ldexp((units + noise).astype(np.float64), -k)
    return out


def newton_logistic(X: FloatArray, y: FloatArray, lam: float, linear: FloatArray | None, start: FloatArray,
                    *, tol: float = 1e-9, max_iter: int = 100,
                    views: tuple[FloatArray, npt.NDArray[np.float32], npt.NDArray[np.float32]] | None = None,
                    ) -> FloatArray:
    """Minimise ``mean_i log(1 + e^{-y_i w.x_i}) + lam/2 ||w||^2 + linear.w`` by damped Newton from ``start``.

    The objective is ``lam``-strongly convex, so the minimiser is unique; iterations stop when the gradient norm
    is below ``tol`` (then ``J(w) - J(w*) <= tol^2 / (2 lam)``). ``views`` are the cached
    :meth:`OwnerRows.newton_views` of ``X`` (computed here when not given).
    """
    n, dim = X.shape
    b = np.zeros(dim) if linear is None else linear
    # The Hessian only steers the step: float32 halves its O(n dim^2) cost, and the stopping rule is on the
    # float64 gradient, so the minimiser reached is the same.
    if views is None:
        X32 = X.astype(np.float32)
        XT, XT32 = np.ascontiguousarray(X.T), np.ascontiguousarray(X32.T)
    else:
        XT, X32, XT32 = views
    ridge = lam * np.eye(dim)

    def value(w: FloatArray, margin: FloatArray) -> float:
        return float(np.mean(np.logaddexp(0.0, -y * margin)) + 0.5 * lam * w @ w + b @ w)

    w = np.array(start, dtype=np.float64)
    margin = X @ w
    f = value(w, margin)
    for _ in range(max_iter):
        s = 0.5 * (1.0 - np.tanh(0.5 * y * margin))  # sigmoid(-y w.x), overflow free
        grad = -(XT @ (y * s)) / n + lam * w + b
        if float(np.linalg.norm(grad)) <= tol:
            break
        curv = (s * (1.0 - s) / n).astype(np.float32)
        hess = ((XT32 * curv) @ X32).astype(np.float64) + ridge
        step = np.linalg.solve(hess, grad)
        dmargin = X @ step
        t = 1.0
        while True:  # Armijo backtracking; the margins of w - t step are margin - t dmargin
            cand, cmargin = w - t * step, margin - t * dmargin
            fc = value(cand, cmargin)
            if fc <= f - 1e-4 * t * float(grad @ step) or t < 1e-10:
                break
            t *= 0.5
        w, margin, f = cand, cmargin, fc
    return w


def average_spec(names: Sequence[str], dim: int, *, bound: float, count_bound: int) -> AggregationSpec:
    """The secure weighted averaging of the owners ``names`` (the server and two aggregators)."""
    return AggregationSpec(server="server", aggregators=("aggregator0", "aggregator1"),
                           clients={k: 1 for k in names}, dim=dim, bound=bound, weighted=True,
                           weight_bound=float(count_bound))


def upload(params: FloatArray, bound: float) -> FloatArray:
    """An owner's parameters as it shares them: clipped to the public ``bound``, one row."""
    return np.clip(params, -bound, bound).reshape(1, -1)
