"""Paper 001's data owners: each holds its own rows and perturbs and minimises its own local objective.

A :class:`DataOwner` sees only its records and the global parameters the server broadcasts. Per round it
returns its local minimiser; the minimisers reach the server only through secure aggregation
(:func:`secure_weighted_average`), so the server learns the record-weighted average and nothing else.

Local objectives (mean form, ``x`` already in the unit ball with the intercept folded in):

* ``ofpa``: ``mean_i log(1 + e^{-y_i w.x_i}) + lam/2 ||w||^2 + (v / n)^T w``, ``v_j ~ Lap(scale)``
  (:func:`mpdp.dp.sensitivities.ofpa_ofaa.ofpa_plan`), minimised by damped Newton from the global parameters.
* ``output``: the unperturbed regularised minimiser plus ``Lap(scale)`` per coordinate (Algorithm 1).
* ``ofaa``: the order-2 Taylor polynomial ``sum_i [ln 2 - (y_i/2) w.x_i + (w.x_i)^2 / 8]`` with its degree-1
  and degree-2 coefficients perturbed by Laplace noise (Algorithm 3). The noisy quadratic form is symmetrised
  and its eigenvalues clipped at 0 (post-processing, as in Zhang et al. 2012), then ``lam`` is added so the
  minimiser exists and is unique; it is found in closed form.

Noise is drawn exactly on a grid (:func:`mpdp.dp.grid.laplace_on_grid`), from the owner's own ``rng``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mpdp.dp.grid import default_grid_bits, laplace_on_grid
from mpdp.errors import ParameterError, explain
from mpdp.protocols.aggregation import AggregationSpec, simulate_aggregation
from mpdp.randomness import RandomSource

__all__ = ["METHODS", "DataOwner", "newton_logistic", "secure_weighted_average"]

FloatArray = npt.NDArray[np.float64]
METHODS = ("ofpa", "output", "ofaa", "none")


@dataclass
class DataOwner:
    """One party of paper 001: its rows ``X`` (unit ball, intercept folded in), labels ``y`` in {-1, +1}."""

    name: str
    X: FloatArray
    y: FloatArray
    method: str
    lam: float
    scale: float
    rng: RandomSource
    _noise: FloatArray | None = field(default=None, init=False, repr=False)
    _fixed: tuple[FloatArray, FloatArray] | None = field(default=None, init=False, repr=False)
    _solution: FloatArray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(explain("method", self.method, f"one of {METHODS}", "pass method='ofpa'"))

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def dim(self) -> int:
        return int(self.X.shape[1])

    def draw_noise(self, label: str) -> None:
        """Draw this release's noise (once per run, or once per round with fresh noise)."""
        self._solution = None
        if self.method == "none":
            self._noise = None
            return
        d = self.dim
        size = d + d * (d + 1) // 2 if self.method == "ofaa" else d
        rng = self.rng.spawn(label)
        self._noise = laplace_on_grid(self.scale, size, grid_bits=default_grid_bits(self.scale), rng=rng)
        self._fixed = None

    def _ofaa_terms(self) -> tuple[FloatArray, FloatArray]:
        if self._fixed is not None:
            return self._fixed
        d = self.dim
        lin = -0.5 * (self.X.T @ self.y)
        quad = (self.X.T @ self.X) / 8.0
        if self._noise is not None:
            lin = lin + self._noise[:d]
            iu = np.triu_indices(d)
            upper = np.where(iu[0] == iu[1], quad[iu], 2.0 * quad[iu]) + self._noise[d:]
            quad = np.zeros((d, d))
            quad[iu] = upper
            quad = (quad + quad.T) / 2.0  # off-diagonal halves, diagonal kept: the symmetric form of ``upper``
            vals, vecs = np.linalg.eigh(quad)
            quad = (vecs * np.clip(vals, 0.0, None)) @ vecs.T
        self._fixed = (lin, quad)
        return self._fixed

    def local_fit(self, start: FloatArray) -> FloatArray:
        """Minimise the (perturbed) local objective from the global parameters ``start``.

        The objective is strictly convex, so its minimiser does not depend on ``start``: while the noise is
        unchanged (``noise="once"``) the owner reuses its previous minimiser instead of recomputing it.
        """
        if self._solution is not None:
            return self._solution
        if self.method == "ofaa":
            lin, quad = self._ofaa_terms()
            # minimise w^T quad w + lin^T w + n lam/2 ||w||^2  ->  (2 quad + n lam I) w = -lin
            self._solution = np.asarray(np.linalg.solve(2.0 * quad + self.n * self.lam * np.eye(self.dim), -lin))
            return self._solution
        linear = None
        if self.method == "ofpa" and self._noise is not None:
            linear = self._noise / self.n
        theta = newton_logistic(self.X, self.y, self.lam, linear, start)
        if self.method == "output" and self._noise is not None:
            theta = theta + self._noise
        self._solution = theta
        return theta


def newton_logistic(X: FloatArray, y: FloatArray, lam: float, linear: FloatArray | None, start: FloatArray,
                    *, tol: float = 1e-9, max_iter: int = 100) -> FloatArray:
    """Minimise ``mean_i log(1 + e^{-y_i w.x_i}) + lam/2 ||w||^2 + linear.w`` by damped Newton from ``start``.

    The objective is ``lam``-strongly convex, so the minimiser is unique; iterations stop when the gradient norm
    is below ``tol`` (then ``J(w) - J(w*) <= tol^2 / (2 lam)``).
    """
    n = X.shape[0]
    b = np.zeros(X.shape[1]) if linear is None else linear

    def value(w: FloatArray) -> float:
        return float(np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.5 * lam * w @ w + b @ w)

    w = np.array(start, dtype=np.float64)
    f = value(w)
    for _ in range(max_iter):
        z = y * (X @ w)
        s = 0.5 * (1.0 - np.tanh(0.5 * z))  # sigmoid(-z), overflow free
        grad = -(X.T @ (y * s)) / n + lam * w + b
        if float(np.linalg.norm(grad)) <= tol:
            break
        hess = (X.T * (s * (1.0 - s))) @ X / n + lam * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:
            cand = w - t * step
            fc = value(cand)
            if fc <= f - 1e-4 * t * float(grad @ step) or t < 1e-10:
                break
            t *= 0.5
        w, f = cand, fc
    return w


def secure_weighted_average(params: dict[str, FloatArray], counts: dict[str, int], *, bound: float,
                            count_bound: int, rng: RandomSource) -> tuple[FloatArray, dict[str, int]]:
    """``sum_k n_k theta_k / sum_k n_k`` through secure aggregation by two non-colluding aggregators.

    Each owner clips its parameters to ``[-bound, bound]`` (public; post-processing of a DP release) and
    shares ``(n_k theta_k, n_k)``; the server only learns the sums. Error: at most
    ``spec.error_bound / sum n_k`` per entry from fixed-point rounding (:mod:`mpdp.protocols.aggregation`).
    Returns the average and the communication (bytes, messages, rounds).
    """
    names = sorted(params)
    dim = int(next(iter(params.values())).shape[0])
    spec = AggregationSpec(server="server", aggregators=("aggregator0", "aggregator1"),
                           clients={k: 1 for k in names}, dim=dim, bound=bound, weighted=True,
                           weight_bound=float(count_bound))
    inputs = {k: np.clip(params[k], -bound, bound).reshape(1, dim) for k in names}
    weights = {k: np.array([float(counts[k])]) for k in names}
    run = simulate_aggregation(spec, inputs, weights, rng=rng)
    return np.asarray(run.results["server"].mean, dtype=np.float64), run.communication()
