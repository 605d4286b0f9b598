"""The functional mechanism's objective as a quadratic polynomial, and its dissection across parties.

Paper 000 (Xu, Yuan, Wu), Equation 5 and Algorithm 1 lines 1-2: the server writes the objective as
``f_D(w) = sum_k g_{D^k}(w^k) + sum_{k,*} h_{D^k D^*}(w^k, w^*)`` and hands each party the coefficients it can
compute alone (g) and those it computes with another party by a secure inner product (h). Both regressions
here are quadratic,

    f_D(w) = const + sum_a lambda_a w_a + w^T M w,    lambda_a = sum_i r(y_i) x_ia,    M = q X^T X,

with ``r(y) = -2y, q = 1, const = sum_i y_i^2`` for linear regression (Equation 2) and, for the order-2
Taylor expansion of logistic regression at 0 (Equation 4), ``r(y) = f1'(0) - y = 1/2 - y``,
``q = f1''(0)/2! = 1/8`` and a data-free constant ``n log 2`` that is dropped.

This module is pure maths: it never touches the network or randomness. The blocks follow
:mod:`mpdp.dp.sensitivities.functional_mechanism`; a block's *monomial* coefficients are ``M_aa`` on the
diagonal and ``2 M_ab`` off it (``w_a w_b`` and ``w_b w_a`` are one monomial), and that is what noise is added to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Dataset
from mpdp.dp.sensitivities.functional_mechanism import Block, FMObjective, block_parties, blocks
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain

__all__ = [
    "ColumnPartition",
    "QuadraticObjective",
    "attribute_l1_bounds",
    "block_shape",
    "check_features",
    "check_labels",
    "exact_objective",
    "label_weights",
    "quadratic_weight",
]

FloatArray = npt.NDArray[np.float64]

_Q = {"linear": 1.0, "logistic": 0.125}


def quadratic_weight(objective: FMObjective) -> float:
    """``q`` in ``M = q X^T X``: 1 (linear) or ``f1''(0)/2! = 1/8`` (logistic Taylor order 2)."""
    if objective not in _Q:
        raise ParameterError(explain("objective", objective, "'linear' or 'logistic'", "choose the regression"))
    return _Q[objective]


def label_weights(objective: FMObjective, y: FloatArray) -> FloatArray:
    """``r(y_i)`` with ``lambda_a = sum_i r(y_i) x_ia``: ``-2y`` (linear) or ``1/2 - y`` (logistic)."""
    quadratic_weight(objective)
    y = np.asarray(y, dtype=np.float64)
    out: FloatArray = -2.0 * y if objective == "linear" else 0.5 - y
    return out


def check_labels(objective: FMObjective, y: npt.ArrayLike, *, clip: bool = False) -> FloatArray:
    """The labels as float64, refused unless in ``[-1, 1]`` (linear) or ``{0, 1}`` (logistic).

    ``clip=True`` clips finite linear-regression targets into [-1, 1] (a fixed per-record map, like the
    features' clipping); classes are never changed.
    """
    quadratic_weight(objective)
    arr = np.asarray(y, dtype=np.float64)
    if arr.ndim != 1:
        raise ShapeMismatchError(explain("y", arr.shape, "a 1-d array of labels", "pass one label per record"))
    if clip and objective == "linear" and np.all(np.isfinite(arr)):
        arr = np.clip(arr, -1.0, 1.0)
    if objective == "logistic":
        if not np.all((arr == 0.0) | (arr == 1.0)):
            raise DomainError(explain("y", np.unique(arr)[:5], "labels in {0, 1} for logistic regression",
                                      "encode the classes as 0/1 (e.g. y = (labels == positive))"))
    elif not np.all(np.isfinite(arr)) or np.abs(arr).max(initial=0.0) > 1.0:
        raise DomainError(explain("y", "labels outside [-1, 1]", "regression targets in [-1, 1]",
                                  "scale the target by a public bound, or pass clip=True"))
    return arr


def attribute_l1_bounds(data: Dataset, columns: Sequence[Sequence[int]]) -> tuple[float, ...]:
    """Each party's public row-L1 bound from the encoding: 1 per attribute it holds (a numeric attribute is
    one column in [-1, 1]; a one-hot group sums to 1), or its column count without an attribute view."""
    if not data.attributes:
        return tuple(float(len(c)) for c in columns)
    owner = {}
    for j, cols in enumerate(data.encoded_columns):
        for c in cols:
            owner[c] = j
    out = []
    for party_cols in columns:
        mine = set(party_cols)
        bound = 0.0
        for j in {owner[c] for c in mine}:
            width = len(data.encoded_columns[j])
            held = sum(1 for c in data.encoded_columns[j] if c in mine)
            bound += 1.0 if data.attributes[j].kind == "categorical" else float(min(width, held))
        out.append(bound)
    return tuple(out)


def check_features(X: npt.ArrayLike, l1_bound: float | None = None, *, clip: bool = False,
                   name: str = "X") -> FloatArray:
    """Features as float64 in ``[-1, 1]`` with row L1 norms at most ``l1_bound`` (default: the column count).

    The sensitivities assume both bounds. With ``clip=False`` data outside them is refused; with
    ``clip=True`` each value is clipped to ``[-1, 1]`` and each row whose L1 norm exceeds the bound is scaled
    down onto it. Clipping is a fixed per-record map, so the sensitivity holds for the clipped data and no
    privacy is lost; it does change the model the data would otherwise give, which is why it is opt-in.
    """
    arr = np.array(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeMismatchError(explain(name, arr.shape, "a 2-d array (records x features)", "reshape it"))
    if not np.all(np.isfinite(arr)):
        raise DomainError(explain(name, "non-finite values", "finite features", "impute missing values first"))
    bound = float(arr.shape[1]) if l1_bound is None else float(l1_bound)
    if not bound >= 0 or not math.isfinite(bound):
        raise ParameterError(explain("l1_bound", l1_bound, "a finite bound >= 0", "pass the public row L1 bound"))
    if clip:
        np.clip(arr, -1.0, 1.0, out=arr)
        norms = np.abs(arr).sum(axis=1)
        over = norms > bound
        if np.any(over):
            arr[over] *= (bound / norms[over])[:, None]
        return arr
    if np.abs(arr).max(initial=0.0) > 1.0:
        raise DomainError(explain(name, f"max |x| = {np.abs(arr).max():.4g}", "every feature in [-1, 1]",
                                  "scale features by public bounds (mpdp.datasets loaders do), or pass clip=True"))
    worst = float(np.abs(arr).sum(axis=1).max(initial=0.0))
    if worst > bound * (1 + 1e-12):
        raise DomainError(explain(f"row L1 norm of {name}", f"{worst:.6g}", f"at most the public bound {bound:g}",
                                  "declare a larger bound, or pass clip=True to project rows onto it"))
    return arr


@dataclass(frozen=True)
class ColumnPartition:
    """Which global columns each party holds, and which party holds the label.

    ``columns[k]`` lists party k's column indices into the joint feature matrix; together they cover
    ``range(d)`` exactly once. Only the label party may hold no columns.
    """

    columns: tuple[tuple[int, ...], ...]
    label_party: int = 0
    _owner: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cols = tuple(tuple(int(c) for c in party) for party in self.columns)
        object.__setattr__(self, "columns", cols)
        if not cols:
            raise ParameterError(explain("columns", cols, "at least one party", "pass e.g. ((0, 1), (2, 3))"))
        if not 0 <= self.label_party < len(cols):
            raise ParameterError(explain("label_party", self.label_party, f"an index in [0, {len(cols)})",
                                         "name the party holding the label"))
        flat = [c for party in cols for c in party]
        d = len(flat)
        if sorted(flat) != list(range(d)):
            raise ParameterError(explain("columns", cols, f"each of the columns 0..{d - 1} held by exactly one party",
                                         "list every column once, e.g. ColumnPartition.even(d, K)"))
        for k, party in enumerate(cols):
            if not party and k != self.label_party:
                raise ParameterError(explain(f"columns of party {k}", party, "at least one column",
                                             "drop parties that hold no features"))
        owner = [0] * d
        for k, party in enumerate(cols):
            for c in party:
                owner[c] = k
        object.__setattr__(self, "_owner", tuple(owner))

    @classmethod
    def even(cls, d: int, parties: int, label_party: int = 0) -> ColumnPartition:
        """Contiguous, near-equal column blocks (the paper's "evenly distributed", d/K columns each)."""
        if not 1 <= parties <= max(d, 1):
            raise ParameterError(explain("parties", parties, f"between 1 and d = {d}",
                                         "use fewer parties than columns"))
        edges = np.linspace(0, d, parties + 1).round().astype(int)
        return cls(tuple(tuple(range(edges[k], edges[k + 1])) for k in range(parties)), label_party)

    @property
    def parties(self) -> int:
        return len(self.columns)

    @property
    def d(self) -> int:
        return len(self._owner)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.columns)

    def owner(self, column: int) -> int:
        """The party holding global column ``column``."""
        return self._owner[column]

    def blocks(self) -> tuple[Block, ...]:
        """The non-empty coefficient blocks (the const block always; lin/quad blocks with columns)."""
        out: list[Block] = []
        for block in blocks(self.parties):
            if block[0] == "const" or math.prod(block_shape(self, block)) > 0:
                out.append(block)
        return tuple(out)

    def involved(self, block: Block) -> frozenset[int]:
        """Parties whose data the block depends on; one party means a single-party (g) block."""
        return block_parties(block, self.label_party)

    def split(self, X: npt.ArrayLike) -> list[FloatArray]:
        """Party k's columns of a joint matrix (simulation only: a real party holds just its own)."""
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.d:
            raise ShapeMismatchError(explain("X", arr.shape, f"(n, {self.d}) for this partition",
                                             "partition the matrix the partition was built for"))
        return [arr[:, list(cols)] for cols in self.columns]


def block_shape(partition: ColumnPartition, block: Block) -> tuple[int, ...]:
    """Shape of a block's coefficient array: () const, (d_k,) lin, (d_k, d_l) quad."""
    if block[0] == "const":
        return ()
    if block[0] == "lin":
        return (len(partition.columns[block[1]]),)  # type: ignore[misc]
    return (len(partition.columns[block[1]]), len(partition.columns[block[2]]))  # type: ignore[misc]


@dataclass(frozen=True)
class QuadraticObjective:
    """``f(w) = constant + linear . w + w^T quad w`` with ``quad`` symmetric (d x d)."""

    constant: float
    linear: FloatArray
    quad: FloatArray

    def __post_init__(self) -> None:
        d = self.linear.shape[0] if self.linear.ndim == 1 else -1
        if d < 0 or self.quad.shape != (d, d):
            raise ShapeMismatchError(explain("quad, linear", (self.quad.shape, self.linear.shape),
                                             "(d, d) and (d,)", "build both from the same columns"))

    @property
    def d(self) -> int:
        return int(self.linear.shape[0])

    def value(self, w: npt.ArrayLike) -> float:
        v = np.asarray(w, dtype=np.float64)
        return float(self.constant + self.linear @ v + v @ self.quad @ v)

    def monomials(self) -> FloatArray:
        """Every coefficient as the functional mechanism sees it: const, lambda_a, then upper-triangle monomials."""
        iu = np.triu_indices(self.d)
        mono = np.where(iu[0] == iu[1], 1.0, 2.0) * self.quad[iu]
        return np.concatenate([[self.constant], self.linear, mono])

    @classmethod
    def from_blocks(cls, partition: ColumnPartition, values: dict[Block, FloatArray]) -> QuadraticObjective:
        """Reassemble the joint objective from per-block arrays in matrix form (``M`` blocks, not monomials)."""
        d = partition.d
        linear = np.zeros(d)
        quad = np.zeros((d, d))
        constant = 0.0
        for block in partition.blocks():
            if block not in values:
                raise ShapeMismatchError(explain("blocks", sorted(map(str, values)), f"a value for {block}",
                                                 "collect every party's coefficients before solving"))
            val = np.asarray(values[block], dtype=np.float64)
            if val.shape != block_shape(partition, block):
                raise ShapeMismatchError(explain(f"block {block}", val.shape, str(block_shape(partition, block)),
                                                 "send the coefficient block the server asked for"))
            if block[0] == "const":
                constant = float(val)
            elif block[0] == "lin":
                linear[list(partition.columns[block[1]])] = val  # type: ignore[misc]
            else:
                rows, cols = list(partition.columns[block[1]]), list(partition.columns[block[2]])  # type: ignore[misc]
                quad[np.ix_(rows, cols)] = val
                quad[np.ix_(cols, rows)] = val.T
        return cls(constant, linear, quad)


def exact_objective(objective: FMObjective, X: npt.ArrayLike, y: npt.ArrayLike,
                    *, constant: bool = True) -> QuadraticObjective:
    """The centralised polynomial coefficients (no noise): Equation 2 or Equation 4."""
    arr = np.asarray(X, dtype=np.float64)
    lab = np.asarray(y, dtype=np.float64)
    if arr.ndim != 2 or lab.shape != (arr.shape[0],):
        raise ShapeMismatchError(explain("X, y", (arr.shape, lab.shape), "(n, d) and (n,)", "one label per row"))
    const = float(lab @ lab) if objective == "linear" and constant else 0.0
    return QuadraticObjective(const, label_weights(objective, lab) @ arr, quadratic_weight(objective) * (arr.T @ arr))

