"""PFDS's differentially private decision tree: makeTree (paper 004, Algorithm 3) and its predictor.

A sharer grows a tree of depth ``h_max`` over the public data universe (:class:`TreeDomain`). At every
inner node it picks an attribute uniformly at random (data-independent); a numeric attribute is split at a
value chosen by the exponential mechanism among ``t`` candidates drawn uniformly from the node's interval,
scored by the Max operator ``u(D, a, v) = max_l |D_{a<v}^{y=l}| + max_l |D_{a>=v}^{y=l}|`` (sensitivity 1,
:func:`mpdp.dp.sensitivities.pfds.max_operator_sensitivity`); a categorical attribute branches on every
category and is not used again below. Leaves (level ``h_max``) get Laplace-noised per-class counts and the
label of the largest noisy count. The tree is built level by level, which draws the same distribution as the
paper's depth-first recursion (each node's choices depend only on its own data and coins) and lets each
level be one ledger entry.

Privacy (Theorem 3.1, made explicit)
------------------------------------
With ``epsilon_level`` per level: the nodes of one level partition the universe, so the split selections
of a level are one ``epsilon_level``-DP release by parallel composition, and the leaf histogram is one
``epsilon_level``-DP Laplace release (L1 sensitivity 1 over all leaves). Composing the ``h_max - 1`` split
levels and the leaf level gives ``h_max * epsilon_level``; PFDS passes ``epsilon_level = eps / (2 h_max)``.
Two points the paper leaves implicit, implemented soundly here:

* "sample t values from active Omega_a" is read as the node's *public* interval of ``a`` (its bounds
  narrowed by the splits above it). Sampling among the values present in the node's data would make the
  candidate set itself a function of the data and void the exponential mechanism's guarantee.
* Empty nodes are kept: the tree's shape never depends on where the data is, only on the attribute coins
  and the private split values.

mpdp addition: ``max_leaves``
-----------------------------
Branching on every category makes the leaf count a product of category counts: on Adult (native-country has
41 categories, education 16, occupation 14) the paper's rule grows ~10^6 leaves, each a Laplace count, which
neither fits the 2 s budget nor leaves any signal. ``TreeParams.max_leaves`` bounds the leaves: each node
carries a leaf allowance (the root's is ``max_leaves``; a node with ``k`` children passes ``allowance // k``
to each) and draws its attribute uniformly among those whose branching still leaves room for the remaining
levels. The rule reads only public quantities, so privacy is unchanged. ``max_leaves=None`` is the paper's
unbounded rule.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 3.1, Algorithms 2-3, Theorem 3.1.
Friedman & Schuster, KDD 2010 (Max operator). McSherry & Talwar, FOCS 2007 (exponential mechanism).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.dp.sensitivities.pfds import class_histogram_sensitivity, max_operator_sensitivity
from mpdp.errors import MalformedMessageError, ParameterError, PrivacyLeakWarning, ShapeMismatchError, explain
from mpdp.learning.pfds import tree_noise
from mpdp.learning.pfds.domain import TreeDomain
from mpdp.randomness import RandomSource, resolve

__all__ = ["PrivateTree", "TreeParams", "make_tree", "min_leaves"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

WIRE_KIND = "mpdp.pfds.tree"
_UNREACHABLE = 1 << 62
# Attribute coins are uniform on [0, 720720 * 2^43): reduced modulo any count <= 16 (720720 = lcm(1..16)) they
# are exactly uniform; for larger counts the bias is below count / 2^62 (and the choice is data-independent).
_COIN_RANGE = 720720 << 43  # "more leaves than any bound": a depth the attributes cannot reach
WIRE_VERSION = 1


@dataclass(frozen=True)
class TreeParams:
    """makeTree's hyper-parameters (paper 004, section 4: ``h_max = 8``, ``t = 10``).

    Attributes
    ----------
    h_max:
        Tree depth in levels (the root is level 1, leaves are level ``h_max``); at most the number of
        attributes (the paper's precondition ``h_max <= |A|``).
    t:
        Candidate split values drawn per numeric split.
    max_leaves:
        Public bound on the number of leaves (see the module docstring); ``None`` for the paper's rule.
    """

    h_max: int = 8
    t: int = 10
    max_leaves: int | None = 1024

    def __post_init__(self) -> None:
        if not isinstance(self.h_max, int) or self.h_max < 1:
            raise ParameterError(explain("h_max", self.h_max, "an int >= 1", "pass e.g. h_max=8"))
        if not isinstance(self.t, int) or self.t < 1:
            raise ParameterError(explain("t", self.t, "an int >= 1", "pass e.g. t=10"))
        if self.max_leaves is not None and (not isinstance(self.max_leaves, int) or self.max_leaves < 1):
            raise ParameterError(explain("max_leaves", self.max_leaves, "None or an int >= 1",
                                         "pass e.g. max_leaves=1024"))

    def check_domain(self, domain: TreeDomain) -> None:
        """Refuse a depth the attributes cannot reach or a leaf bound the depth cannot respect."""
        if self.h_max > domain.d:
            raise ParameterError(explain("h_max", self.h_max, f"at most the number of attributes ({domain.d})",
                                         f"pass h_max <= {domain.d} (paper 004 requires h_max <= |A|)"))
        if self.max_leaves is not None:
            need = min_leaves(domain, np.ones(domain.d, dtype=bool), self.h_max - 1)
            if self.max_leaves < need:
                raise ParameterError(explain("max_leaves", self.max_leaves,
                                             f">= {need}, the fewest leaves a depth-{self.h_max} tree can have",
                                             f"pass max_leaves >= {need} or a smaller h_max"))


def min_leaves(domain: TreeDomain, available: BoolArray, splits: int) -> int:
    """Fewest leaves ``splits`` more levels can produce from ``available`` attributes (public arithmetic).

    Numeric attributes can be reused (branching 2), categorical ones once each; the minimum takes the
    ``splits`` smallest branchings.
    """
    if splits <= 0:
        return 1
    factors = sorted(domain.n_categories[j] for j in range(domain.d) if available[j] and not domain.numeric[j])
    if any(domain.numeric):
        factors = sorted(factors + [2] * splits)
    if len(factors) < splits:
        return _UNREACHABLE
    return min(_UNREACHABLE, math.prod(factors[:splits]))


@dataclass
class PrivateTree:
    """A private tree in breadth-first order: node ``0`` is the root, children of a node are contiguous.

    ``leaf_counts`` (noisy per-class counts) stays with the tree's owner; a received tree carries only the
    public structure and the leaf labels, which is all :meth:`predict` needs.
    """

    domain: TreeDomain
    h_max: int
    level: IntArray
    attribute: IntArray
    threshold: FloatArray
    first_child: IntArray
    n_children: IntArray
    leaf_label: IntArray
    leaf_counts: FloatArray | None = None
    _boxes: tuple[FloatArray, FloatArray, IntArray] | None = field(default=None, repr=False)

    # -- shape ---------------------------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return int(self.level.size)

    @property
    def leaf_start(self) -> int:
        """Node id of the first leaf (leaves are the last level)."""
        return int(np.searchsorted(self.level, self.h_max))

    @property
    def n_leaves(self) -> int:
        return self.n_nodes - self.leaf_start

    def level_nodes(self, h: int) -> IntArray:
        """Node ids of level ``h`` (1-based)."""
        lo, hi = np.searchsorted(self.level, [h, h + 1])
        return np.arange(lo, hi, dtype=np.int64)

    def leaf_ancestor(self, h: int) -> IntArray:
        """For every leaf, its ancestor at level ``h``."""
        parent = np.full(self.n_nodes, -1, dtype=np.int64)
        inner = np.flatnonzero(self.first_child >= 0)
        for node in inner:
            parent[self.first_child[node]: self.first_child[node] + self.n_children[node]] = node
        anc = np.arange(self.leaf_start, self.n_nodes, dtype=np.int64)
        for _ in range(self.h_max - h):
            anc = parent[anc]
        return anc

    # -- prediction ----------------------------------------------------------------------------------------
    def leaf_of(self, values: FloatArray) -> IntArray:
        """Leaf index (0-based among leaves) of every row of the attribute view ``values``."""
        self.domain.check_values(values)
        n = values.shape[0]
        node = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        numeric = np.array(self.domain.numeric, dtype=bool)
        for _ in range(self.h_max - 1):
            attr = self.attribute[node]
            x = values[rows, attr]
            offset = np.where(numeric[attr], x >= self.threshold[node], x).astype(np.int64)
            node = self.first_child[node] + offset
        return node - self.leaf_start

    def predict(self, values: FloatArray) -> IntArray:
        """The class (or label bucket) of the leaf each row falls in."""
        return self.leaf_label[self.leaf_of(values)]

    # -- leaf boxes ----------------------------------------------------------------------------------------
    def boxes(self) -> tuple[FloatArray, FloatArray, IntArray]:
        """Per leaf: numeric lower and upper bounds (n_leaves x d) and fixed category (-1 where free)."""
        if self._boxes is None:
            d = self.domain.d
            lo_all, hi_all = self.domain.bounds_array()
            lower = np.tile(lo_all, (self.n_nodes, 1))
            upper = np.tile(hi_all, (self.n_nodes, 1))
            fixed = np.full((self.n_nodes, d), -1, dtype=np.int64)
            for node in range(self.leaf_start):
                a, first, k = int(self.attribute[node]), int(self.first_child[node]), int(self.n_children[node])
                kids = slice(first, first + k)
                lower[kids], upper[kids], fixed[kids] = lower[node], upper[node], fixed[node]
                if self.domain.numeric[a]:
                    upper[first, a] = self.threshold[node]
                    lower[first + 1, a] = self.threshold[node]
                else:
                    fixed[kids, a] = np.arange(k)
            leaves = slice(self.leaf_start, self.n_nodes)
            self._boxes = (lower[leaves], upper[leaves], fixed[leaves])
        return self._boxes

    # -- wire ----------------------------------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """The public predictor: structure and leaf labels (the owner's noisy counts stay home)."""
        return {
            "kind": WIRE_KIND, "version": WIRE_VERSION, "domain": self.domain.signature(), "h_max": self.h_max,
            "level": self.level.astype(np.int16), "attribute": self.attribute.astype(np.int32),
            "threshold": self.threshold.astype(np.float64), "first_child": self.first_child.astype(np.int64),
            "n_children": self.n_children.astype(np.int32), "leaf_label": self.leaf_label.astype(np.int16),
        }

    @classmethod
    def from_wire(cls, wire: Any, domain: TreeDomain) -> PrivateTree:
        """Rebuild a received tree, checking every structural invariant :meth:`predict` relies on."""
        def bad(what: str, got: Any, expected: str) -> MalformedMessageError:
            return MalformedMessageError(explain(f"tree message {what}", got, expected,
                                                 "the sender is not running a compatible PFDS; reject it"))

        keys = {"kind", "version", "domain", "h_max", "level", "attribute", "threshold", "first_child",
                "n_children", "leaf_label"}
        if not isinstance(wire, dict) or set(wire) != keys:
            raise bad("fields", sorted(wire) if isinstance(wire, dict) else type(wire).__name__, str(sorted(keys)))
        if wire["kind"] != WIRE_KIND or wire["version"] != WIRE_VERSION:
            raise bad("kind/version", (wire["kind"], wire["version"]), f"({WIRE_KIND!r}, {WIRE_VERSION})")
        if list(wire["domain"]) != domain.signature():
            raise bad("domain", "another data universe", "the receiver's attribute domain")
        h_max = wire["h_max"]
        if not isinstance(h_max, int) or not 1 <= h_max <= domain.d:
            raise bad("h_max", h_max, f"an int in [1, {domain.d}]")
        arrays: dict[str, Any] = {}
        for name in ("level", "attribute", "threshold", "first_child", "n_children", "leaf_label"):
            arr = wire[name]
            if not isinstance(arr, np.ndarray) or arr.ndim != 1:
                raise bad(name, type(arr).__name__, "a 1-d array")
            arrays[name] = arr.astype(np.float64 if name == "threshold" else np.int64)
        n = arrays["level"].size
        if any(arrays[k].size != n for k in ("attribute", "threshold", "first_child", "n_children")) or n < 1:
            raise bad("array lengths", [arrays[k].size for k in arrays], "one entry per node")
        level = arrays["level"]
        if level[0] != 1 or np.any(np.diff(level) < 0) or level[-1] != h_max or np.any(level < 1):
            raise bad("levels", "not breadth-first from 1 to h_max", "non-decreasing levels 1..h_max")
        inner = level < h_max
        attr, first, kids = arrays["attribute"], arrays["first_child"], arrays["n_children"]
        if np.any(attr[inner] < 0) or np.any(attr[inner] >= domain.d) or np.any(attr[~inner] != -1):
            raise bad("attributes", "out of range", "attribute ids at inner nodes, -1 at leaves")
        branching = np.array([domain.branching(j) for j in range(domain.d)])
        if np.any(kids[inner] != branching[attr[inner]]) or np.any(kids[~inner] != 0):
            raise bad("children counts", "inconsistent", "2 per numeric split, one per category")
        expected_first = 1 + np.concatenate(([0], np.cumsum(kids[inner])[:-1]))
        if int(kids[inner].sum()) != n - 1 or np.any(first[inner] != expected_first) or np.any(first[~inner] != -1):
            raise bad("children offsets", "inconsistent", "contiguous breadth-first children")
        if np.any(level[first[inner]] != level[inner] + 1):
            raise bad("children levels", "inconsistent", "children one level below their parent")
        labels = arrays["leaf_label"]
        n_leaves = int(np.count_nonzero(~inner))
        if labels.size != n_leaves or np.any(labels < 0) or np.any(labels >= domain.n_classes):
            raise bad("leaf labels", labels.size, f"{n_leaves} labels in 0..{domain.n_classes - 1}")
        thr = arrays["threshold"]
        numeric_split = inner & np.isin(attr, np.flatnonzero(domain.numeric))
        if not np.all(np.isfinite(thr[numeric_split])):
            raise bad("thresholds", "non-finite", "finite split values")
        return cls(domain, h_max, level, attr, thr, first, kids, labels)


# ---------------------------------------------------------------------------------------------------------
# makeTree
# ---------------------------------------------------------------------------------------------------------
def max_operator(x: FloatArray, classes: IntArray, candidates: FloatArray, n_classes: int) -> FloatArray:
    """Max-operator utility of every candidate split value (one node's data ``x`` on one attribute)."""
    below = np.empty((candidates.size, n_classes))
    totals = np.bincount(classes, minlength=n_classes).astype(np.float64)
    for c in range(n_classes):
        xs = np.sort(x[classes == c])
        below[:, c] = np.searchsorted(xs, candidates, side="left")
    above = totals[None, :] - below
    utility: FloatArray = below.max(axis=1) + above.max(axis=1)
    return utility


def make_tree(
    values: FloatArray,
    labels: FloatArray,
    domain: TreeDomain,
    params: TreeParams = TreeParams(),
    *,
    epsilon_level: float,
    rng: RandomSource | None = None,
    ledger: BudgetSpender | None = None,
) -> PrivateTree:
    """Grow one private tree on a party's records (Algorithm 3).

    Parameters
    ----------
    values:
        The party's attribute view (n x d: numeric values, categorical codes).
    labels:
        Class labels ``0..k-1``, or regression labels in ``domain.label_range`` (bucketed here).
    domain, params:
        The public universe and the hyper-parameters.
    epsilon_level:
        Budget of each level (PFDS: ``eps / (2 h_max)``).
    rng:
        Random source for the attribute coins, candidate values and noise.
    ledger:
        The owner's privacy ledger: charged ``epsilon_level`` per level before the level's noise is drawn,
        ``h_max * epsilon_level`` in total (Theorem 3.1). ``None`` records nothing (the caller accounts).

    Security
    --------
    ``h_max * epsilon_level``-DP for the owner's records (add/remove neighbours), see the module docstring.

    References
    ----------
    Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), Algorithm 3 and Theorem 3.1.
    """
    rng = resolve(rng)
    tree_noise.check_epsilon(epsilon_level, "epsilon_level")
    params.check_domain(domain)
    values = np.asarray(values, dtype=np.float64)
    domain.check_values(values)
    if values.shape[0] == 0:
        raise ShapeMismatchError(explain("values", "an empty party", "at least one record",
                                         "leave parties without records out of the sharers"))
    if labels.shape != (values.shape[0],):
        raise ShapeMismatchError(explain("labels", labels.shape, f"({values.shape[0]},)", "one label per row"))
    classes = domain.label_classes(np.asarray(labels, dtype=np.float64))
    k = domain.n_classes
    numeric = np.array(domain.numeric, dtype=bool)
    lo_all, hi_all = domain.bounds_array()
    if rng.is_seeded:
        warnings.warn(f"make_tree: a seeded {rng!r} makes the tree's noise reproducible; use fresh entropy "
                      "for real releases", PrivacyLeakWarning, stacklevel=2)

    level_list: list[int] = []
    attribute: list[int] = []
    threshold: list[float] = []
    first_child: list[int] = []
    n_children: list[int] = []
    # Frontier entries: (row indices, available attributes, leaf allowance, numeric lower, numeric upper).
    allowance0 = params.max_leaves if params.max_leaves is not None else _UNREACHABLE
    frontier: list[tuple[IntArray, BoolArray, int, FloatArray, FloatArray]] = [
        (np.arange(values.shape[0]), np.ones(domain.d, dtype=bool), allowance0, lo_all.copy(), hi_all.copy())
    ]
    next_id = 1
    cache: dict[tuple[bytes, int, int], list[int]] = {}
    u_sens = max_operator_sensitivity()
    for h in range(1, params.h_max):
        # The whole level is charged before any of its selections: its nodes hold disjoint data.
        tree_noise.charge_level(ledger, epsilon=epsilon_level, sensitivity=u_sens,
                                label=f"pfds.makeTree level {h}: split selection")
        nxt: list[tuple[IntArray, BoolArray, int, FloatArray, FloatArray]] = []
        splits_after = params.h_max - h - 1
        # The level's public coins, drawn at once: attribute choices and candidate split values.
        coins = rng.below(_COIN_RANGE, len(frontier))
        uniforms = rng.random_open((len(frontier), params.t))
        for node, (rows, available, allowance, lower, upper) in enumerate(frontier):
            eligible = _eligible(domain, available, allowance, splits_after, params.max_leaves is not None, cache)
            a = eligible[int(coins[node] % np.uint64(len(eligible)))]
            kids = domain.branching(a)
            level_list.append(h)
            attribute.append(a)
            first_child.append(next_id)
            n_children.append(kids)
            next_id += kids
            child_allowance = max(1, allowance // kids)
            x = values[rows, a]
            if numeric[a]:
                candidates = lower[a] + (upper[a] - lower[a]) * uniforms[node]
                utility = max_operator(x, classes[rows], candidates, k)
                choice = tree_noise.exponential_choice(utility, epsilon=epsilon_level, sensitivity=u_sens, rng=rng)
                v = float(candidates[choice])
                threshold.append(v)
                go_right = x >= v
                left_hi, right_lo = upper.copy(), lower.copy()
                left_hi[a], right_lo[a] = v, v
                nxt.append((rows[~go_right], available, child_allowance, lower, left_hi))
                nxt.append((rows[go_right], available, child_allowance, right_lo, upper))
            else:
                threshold.append(float("nan"))
                below = _after(available, a, domain)
                codes = x.astype(np.int64)
                order = np.argsort(codes, kind="stable")
                bounds = np.searchsorted(codes[order], np.arange(kids + 1))
                for c in range(kids):
                    nxt.append((rows[order[bounds[c]:bounds[c + 1]]], below, child_allowance, lower, upper))
        frontier = nxt

    # Leaves: one Laplace release of the whole (leaf x class) histogram.
    n_leaves = len(frontier)
    leaf_id = np.empty(values.shape[0], dtype=np.int64)
    for j, (rows, *_rest) in enumerate(frontier):
        leaf_id[rows] = j
    hist = np.bincount(leaf_id * k + classes, minlength=n_leaves * k).astype(np.float64).reshape(n_leaves, k)
    noisy = tree_noise.laplace_counts(hist, epsilon=epsilon_level, sensitivity=class_histogram_sensitivity(),
                                      rng=rng, ledger=ledger, label=f"pfds.makeTree level {params.h_max}: leaf counts")
    label = _argmax_random_ties(noisy, rng)
    level_list += [params.h_max] * n_leaves
    attribute += [-1] * n_leaves
    threshold += [float("nan")] * n_leaves
    first_child += [-1] * n_leaves
    n_children += [0] * n_leaves
    tree = PrivateTree(
        domain=domain, h_max=params.h_max, level=np.array(level_list, dtype=np.int64),
        attribute=np.array(attribute, dtype=np.int64), threshold=np.array(threshold, dtype=np.float64),
        first_child=np.array(first_child, dtype=np.int64), n_children=np.array(n_children, dtype=np.int64),
        leaf_label=label, leaf_counts=noisy,
    )
    return tree


def _eligible(domain: TreeDomain, available: BoolArray, allowance: int, splits_after: int, bounded: bool,
              cache: dict[tuple[bytes, int, int], list[int]]) -> list[int]:
    """Attributes a node may split on: those in ``available`` whose branching leaves room for the levels below.

    Public arithmetic only (see the module docstring); memoised per (available set, allowance, depth).
    """
    key = (available.tobytes(), allowance, splits_after)
    if key not in cache:
        candidates = [int(a) for a in np.flatnonzero(available)]
        eligible = [a for a in candidates if not bounded
                    or allowance // domain.branching(a) >= min_leaves(domain, _after(available, a, domain),
                                                                       splits_after)]
        if not eligible:  # only when max_leaves is tighter than the categories allow: a public fallback
            eligible = [min(candidates, key=domain.branching)]
        cache[key] = eligible
    return cache[key]


def _after(available: BoolArray, a: int, domain: TreeDomain) -> BoolArray:
    """The attributes left below a split on ``a``: a categorical is used once, a numeric stays usable."""
    if domain.numeric[a]:
        return available
    out = available.copy()
    out[a] = False
    return out


def _argmax_random_ties(scores: FloatArray, rng: RandomSource) -> IntArray:
    """Row-wise argmax, ties broken uniformly by the random source (post-processing, data-independent)."""
    jitter = rng.random(scores.shape)
    best = scores.max(axis=1, keepdims=True)
    out: IntArray = np.argmax(np.where(scores == best, 1.0 + jitter, 0.0), axis=1).astype(np.int64)
    return out
