"""Synthetic data for the papers' settings, drawn from an explicit ``rng``.

* :func:`sparse_linear_regression`: paper 000's sparse high-dimensional regression (n = 80,000, d = 800,
  sparsity s in {0.1, 0.5, 1.0}: the fraction of non-zero entries of X *and* of the true weights).
* :func:`logistic_with_optimum`: a well-specified logistic model, so the true weights are the minimiser of
  the expected log-loss (the "known optimum" a convergence test compares with).
* :func:`mixed_tabular`: numeric and categorical attributes with a label given by axis-aligned rules,
  for tree-based synthesis (paper 004) and mixture models (paper 002); classification or regression.

Every generator returns data already in the library's conventions (features in [-1, 1] with an attribute
view, labels in {0, 1} or [-1, 1]). Gaussian draws use Box-Muller on the source's 53-bit floats: this is data
generation, not DP noise, so floating-point sampling is fine here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset
from mpdp.datasets.encoding import make_dataset
from mpdp.errors import ParameterError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = ["SyntheticTask", "logistic_with_optimum", "mixed_tabular", "sparse_linear_regression", "standard_normal"]

_CHUNK_ROWS = 4096


@dataclass(frozen=True)
class SyntheticTask:
    """A generated dataset with the parameters that generated it."""

    data: Dataset
    w_true: npt.NDArray[np.float64]
    noise_std: float
    description: str


def standard_normal(shape: int | tuple[int, ...], *, rng: RandomSource) -> npt.NDArray[np.float64]:
    """N(0, 1) draws by Box-Muller (for data generation only; DP noise uses mpdp.dp's exact samplers)."""
    size = int(np.prod(shape))
    half = (size + 1) // 2
    u1, u2 = rng.random_open(half), rng.random(half)
    radius = np.sqrt(-2.0 * np.log(u1))
    z = np.concatenate([radius * np.cos(2 * np.pi * u2), radius * np.sin(2 * np.pi * u2)])[:size]
    return z.reshape(shape)


def _check_size(n: int, d: int) -> None:
    if n < 1 or d < 1:
        raise ParameterError(explain("(n, d)", (n, d), "n >= 1 and d >= 1", "pass positive sizes"))


def _numeric_dataset(name: str, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], task: str) -> Dataset:
    attrs = tuple(Attribute(f"x{j}", "numeric", bounds=(-1.0, 1.0)) for j in range(X.shape[1]))
    return Dataset(name=name, X=X, y=y, feature_names=tuple(a.name for a in attrs),
                   task="regression" if task == "regression" else "classification", attributes=attrs, values=X,
                   encoded_columns=tuple((j,) for j in range(X.shape[1])), label_name="y")


def _sparse_uniform(n: int, d: int, sparsity: float, rng: RandomSource) -> npt.NDArray[np.float64]:
    """Entries 0 with probability 1 - s, else uniform on [-1, 1): one uniform draw u per entry decides both
    (u < s keeps the entry, and u / s is then uniform on [0, 1))."""
    X = np.empty((n, d), dtype=np.float64)
    for start in range(0, n, _CHUNK_ROWS):
        u = rng.random((min(_CHUNK_ROWS, n - start), d))
        # In place: v = 2 (u / s) - 1. Correctly rounded division is monotone and doubling is exact, so
        # u >= s gives v >= 1 exactly: those entries (and only those, up to a 2^-53 edge) become 0.
        np.divide(u, sparsity, out=u)
        u *= 2.0
        u -= 1.0
        u[u >= 1.0] = 0.0
        X[start:start + u.shape[0]] = u
    return X


def sparse_linear_regression(
    n: int = 80_000, d: int = 800, sparsity: float = 0.1, *, signal_std: float = 0.3, noise_std: float = 0.06,
    rng: RandomSource | None = None,
) -> SyntheticTask:
    """Paper 000's synthetic regression: y = clip(X w + e, -1, 1).

    X has i.i.d. entries, zero with probability 1 - s and uniform on [-1, 1] otherwise; ``w_true`` has
    ``max(1, round(s d))`` non-zero coordinates (uniform signs and magnitudes), scaled so that the population
    standard deviation of ``X w`` is ``signal_std`` (Var = s ||w||^2 / 3); e ~ N(0, noise_std^2). The defaults
    put the noise variance (0.0036) where paper 000's non-private MSE sits (0.0033-0.0052) and clip fewer than
    0.2 % of labels.
    """
    _check_size(n, d)
    if not 0 < sparsity <= 1:
        raise ParameterError(explain("sparsity", sparsity, "a fraction in (0, 1]", "pass e.g. 0.1, 0.5 or 1.0"))
    if signal_std <= 0 or noise_std < 0:
        raise ParameterError(explain("(signal_std, noise_std)", (signal_std, noise_std), "> 0 and >= 0",
                                     "pass positive scales"))
    rng = resolve(rng)
    support = rng.spawn("support").permutation(d)[: max(1, round(sparsity * d))]
    w = np.zeros(d)
    w[support] = 2.0 * rng.spawn("weights").random(support.size) - 1.0
    w *= signal_std / np.sqrt(sparsity * float(w @ w) / 3.0)
    X = _sparse_uniform(n, d, sparsity, rng.spawn("X"))
    y = np.clip(X @ w + noise_std * standard_normal(n, rng=rng.spawn("noise")), -1.0, 1.0)
    data = _numeric_dataset(f"synthetic-linear(s={sparsity:g})", X, y, "regression")
    return SyntheticTask(data, w, noise_std, f"sparse linear regression n={n} d={d} s={sparsity:g}")


def logistic_with_optimum(
    n: int = 10_000, d: int = 10, *, weight_norm: float = 2.0, separable: bool = False,
    rng: RandomSource | None = None,
) -> SyntheticTask:
    """Logistic data whose population log-loss minimiser is ``w_true``.

    X is uniform on [-1, 1]^d, ``w_true`` a uniformly random direction of length ``weight_norm``, and
    y ~ Bernoulli(sigmoid(X w_true)): the model is well specified, so ``w_true`` minimises the expected
    log-loss (the empirical minimiser converges to it at rate 1/sqrt(n)). ``separable=True`` takes
    y = 1[X w_true > 0] instead (the log-loss then has no finite minimiser; ``w_true`` gives the direction).
    Rows in the unit ball are ``data.unit_ball()`` = X / sqrt(d); the optimum for them is ``w_true * sqrt(d)``.
    """
    _check_size(n, d)
    if not weight_norm > 0:
        raise ParameterError(explain("weight_norm", weight_norm, "> 0", "pass e.g. 2.0"))
    rng = resolve(rng)
    direction = standard_normal(d, rng=rng.spawn("w"))
    w = weight_norm * direction / np.linalg.norm(direction)
    X = 2.0 * rng.spawn("X").random((n, d)) - 1.0
    margin = X @ w
    if separable:
        y = (margin > 0).astype(np.float64)
    else:
        y = (rng.spawn("y").random(n) < 1.0 / (1.0 + np.exp(-margin))).astype(np.float64)
    data = _numeric_dataset("synthetic-logistic", X, y, "classification")
    return SyntheticTask(data, w, 0.0, f"logistic n={n} d={d} |w|={weight_norm:g} separable={separable}")


def mixed_tabular(
    n: int = 5_000, *, numeric: int = 4, categorical: int = 3, categories: int = 4,
    task: Literal["classification", "regression"] = "classification", label_noise: float = 0.05,
    rng: RandomSource | None = None,
) -> Dataset:
    """Numeric attributes on [0, 100] and categorical ones with ``categories`` levels, labelled by rules.

    The label depends on thresholds of the numeric attributes and on the categories (score =
    sum_j a_j 1[x_j > t_j] + sum_c b_c[code_c]); classification takes 1[score > median of the population
    score] with ``label_noise`` flips, regression rescales the score into [-1, 1] plus small Gaussian noise.
    Numeric values are rounded to integers (like ages or hours), so trees meet ties as in real data.
    """
    if n < 2 or numeric < 0 or categorical < 0 or numeric + categorical < 1 or categories < 2:
        raise ParameterError(explain("(n, numeric, categorical, categories)", (n, numeric, categorical, categories),
                                     "n >= 2, at least one attribute, categories >= 2", "pass e.g. the defaults"))
    if task not in ("classification", "regression"):
        raise ParameterError(explain("task", task, "'classification' or 'regression'", "pick one"))
    if not 0 <= label_noise < 0.5:
        raise ParameterError(explain("label_noise", label_noise, "a rate in [0, 0.5)", "pass e.g. 0.05"))
    rng = resolve(rng)
    attrs: list[Attribute] = []
    columns: list[npt.NDArray[np.float64]] = []
    score = np.zeros(n)
    rule = rng.spawn("rule")
    for j in range(numeric):
        x = np.round(100.0 * rng.spawn(f"num{j}").random(n))
        threshold = 20.0 + 60.0 * float(rule.random(1)[0])
        score += (1.0 + float(rule.random(1)[0])) * (x > threshold) * (1 if j % 2 == 0 else -1)
        attrs.append(Attribute(f"num{j}", "numeric", bounds=(0.0, 100.0)))
        columns.append(x)
    for c in range(categorical):
        # Skewed category frequencies (weights 1, 1/2, 1/3, ...), as real categoricals are.
        weights = 1.0 / np.arange(1, categories + 1)
        cdf = np.cumsum(weights / weights.sum())
        codes = np.minimum(np.searchsorted(cdf, rng.spawn(f"cat{c}").random(n), side="right"), categories - 1)
        effects = 2.0 * rule.random(categories) - 1.0
        score += effects[codes]
        attrs.append(Attribute(f"cat{c}", "categorical", categories=tuple(f"c{k}" for k in range(categories))))
        columns.append(codes.astype(np.float64))
    values = np.column_stack(columns)
    if task == "classification":
        y = (score > np.median(score)).astype(np.float64)
        flips = rng.spawn("flips").random(n) < label_noise
        y[flips] = 1.0 - y[flips]
    else:
        spread = max(float(np.abs(score).max()), 1e-12)
        y = np.clip(0.9 * score / spread + 0.05 * standard_normal(n, rng=rng.spawn("noise")), -1.0, 1.0)
    groups = {"numeric": tuple(a.name for a in attrs if a.kind == "numeric"),
              "categorical": tuple(a.name for a in attrs if a.kind == "categorical")}
    return make_dataset(f"synthetic-mixed-{task}", attrs, values, y, task=task, label_name="y",
                        groups={g: m for g, m in groups.items() if m})
