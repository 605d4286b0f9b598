"""Who adds which Laplace noise in the vertical functional mechanism, from which random stream, on which grid.

Paper 000, Algorithm 1 lines 3, 7 and 12: every polynomial coefficient gets ``Lap(Delta_f / eps)`` (top-down)
or, bottom-up, each coefficient group gets the noise its parties' budgets buy. An :class:`FMPlan` is the
public description the server sends: objective, column partition, public row-L1 bounds and budgets. Every
party rebuilds the same plan from it; nothing in it depends on the data.

Noise is added to *monomial* coefficients (``lambda_a``, ``M_aa``, and ``2 M_ab`` for ``a < b``), exactly once
each, released on the grid ``2^-k`` with exact discrete Laplace noise (:mod:`mpdp.dp.grid`): the value is
snapped to the grid and integer noise is added, so floating-point attacks do not apply. The grid calibration
uses the whole group's coefficient count, ``floor(Delta 2^k) + D``, because one record moves all of them.

Noise ownership and streams (what makes Claim 1 checkable)
---------------------------------------------------------
The noise on monomial ``w_a w_b`` (``a <= b``, global column indices) is added by the party holding column
``a``; on ``lambda_a`` by the party holding column ``a``; on the constant by the label party. Top-down, the
noise of the monomials in row ``a`` is drawn in one call from the stream ``noise_root.spawn("quad/a")``
(position ``b - a``), of ``lambda_a`` from ``spawn("lin/a")`` and of the constant from ``spawn("const")``.
These labels name global columns, not parties, so with the same ``noise_root`` the draws are the same for
every partition and every K, and equal to those of the centralised reference (one party holding every
column): the released coefficients then differ from the centralised ones only by the secure backend's
error. In a real run each party's ``noise_root`` is its own fresh source; the rows are disjoint, so the
draws stay independent even when (as in tests) every party is handed the same seeded root.
Bottom-up, groups have different scales and row ``a`` is drawn per partner party from ``"quad/a/l"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import PrivacyCost
from mpdp.dp.grid import default_grid_bits, grid_l1_sensitivity, snap_to_grid
from mpdp.dp.samplers import discrete_laplace
from mpdp.dp.sensitivities import functional_mechanism as sens
from mpdp.dp.sensitivities.functional_mechanism import Block, FMObjective
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.functional_mechanism.objective import ColumnPartition, QuadraticObjective, block_shape
from mpdp.randomness import RandomSource

__all__ = [
    "FMPlan",
    "NoiseGroup",
    "PartyNoise",
    "add_noise",
    "approximation_inflation",
    "assemble_release",
    "cross_units",
    "cross_units_real",
    "local_units",
    "monomial_factor",
    "monomial_mask",
    "plan_for_columns",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
UnitArray = npt.NDArray[np.uint64]  # grid units modulo 2^64 (two's complement), as the ring Z_2^64 holds them

_MIN_FRAC_BITS = 4
_MAX_FRAC_BITS = 20


@dataclass(frozen=True)
class NoiseGroup:
    """One Laplace release: the coefficients of ``blocks``, sensitivity ``sensitivity``, budget ``epsilon``."""

    name: str
    blocks: tuple[Block, ...]
    epsilon: float
    sensitivity: float
    dim: int
    grid_bits: int
    units_scale: Fraction  # discrete Laplace scale in grid units

    @property
    def scale(self) -> float:
        """The Laplace scale actually applied, in coefficient units (``~ Delta / eps``)."""
        return float(self.units_scale) * 2.0 ** -self.grid_bits


def _block_dim(partition: ColumnPartition, block: Block) -> int:
    shape = block_shape(partition, block)
    if block[0] == "quad" and block[1] == block[2]:  # type: ignore[misc]
        return shape[0] * (shape[0] + 1) // 2
    return math.prod(shape)


@dataclass(frozen=True)
class FMPlan:
    """The public plan of one vertical FM run (Algorithm 1, lines 1-3).

    Parameters
    ----------
    objective:
        ``"linear"`` or ``"logistic"``.
    partition:
        Columns per party and the label party.
    party_l1:
        Public bound on the L1 norm of each party's block of a row (default: its column count, the paper's
        box domain). Parties refuse (or clip) rows that exceed it.
    epsilon:
        Top-down budget: the server picks eps and every coefficient gets ``Lap(Delta_f / eps)``.
    bottom_up:
        Bottom-up budgets instead of ``epsilon``: ``{"single": (eps^0, ...), "cross": {(k, l): eps^kl}}``.
        A group with no coefficients needs no budget (its entry is ignored).
    records:
        The number of records n (public): it bounds every coefficient by ``2n`` and so fixes how fine a grid
        int64 can carry. Default: no cap beyond the grid's own.
    coefficient_error:
        Public bound on the error of each entry of an approximate cross-party product (CKKS), 0 for exact
        backends. The computed coefficients then move by up to ``Delta + 2 E sum |factor|`` when a record
        changes, and every group's sensitivity is inflated by that (see :func:`approximation_inflation`), so the
        guarantee holds for what is really released.
    max_frac_bits:
        Cap on the features' fractional bits (a backend with real-valued shares of magnitude up to 2^24 needs
        the grid to stay coarse enough for int64).
    """

    objective: FMObjective
    partition: ColumnPartition
    party_l1: tuple[float, ...] | None = None
    epsilon: float | None = None
    bottom_up: Mapping[str, Any] | None = None
    records: int | None = None
    coefficient_error: float = 0.0
    max_frac_bits: int = 20
    groups: dict[Block, NoiseGroup] = field(init=False, repr=False, compare=False)
    frac_bits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sens.blocks(self.partition.parties)
        l1 = tuple(float(c) for c in (self.party_l1 if self.party_l1 is not None else self.partition.sizes))
        if len(l1) != self.partition.parties:
            raise ShapeMismatchError(explain("party_l1", l1, f"{self.partition.parties} bounds, one per party",
                                             "give each party's public row L1 bound"))
        for k, (c, dk) in enumerate(zip(l1, self.partition.sizes, strict=True)):
            if not 0 <= c <= dk:
                raise ParameterError(explain(f"party_l1[{k}]", c, f"a bound in [0, d_k = {dk}]",
                                             "features lie in [-1, 1], so d_k always holds"))
        object.__setattr__(self, "party_l1", l1)
        if self.records is not None and (isinstance(self.records, bool) or int(self.records) < 1):
            raise ParameterError(explain("records", self.records, "an int >= 1 or None", "pass the record count n"))
        if (self.epsilon is None) == (self.bottom_up is None):
            raise ParameterError(explain("epsilon / bottom_up", (self.epsilon, self.bottom_up),
                                         "exactly one of them", "pass epsilon=... (top-down) or bottom_up=..."))
        label = self.partition.label_party
        masses = sens.coefficient_masses(self.objective, l1, label)
        live = [b for b in self.partition.blocks() if masses[b] > 0]
        groups: dict[Block, NoiseGroup] = {}
        specs: list[tuple[str, tuple[Block, ...], float, float, int]]
        if self.epsilon is not None:
            eps = _positive(self.epsilon, "epsilon")
            object.__setattr__(self, "epsilon", eps)
            delta = sens.global_sensitivity(self.objective, l1, label)
            specs = [("all", tuple(live), eps, delta, sum(_block_dim(self.partition, b) for b in live))]
        else:
            specs = self._bottom_up_groups(live, l1)
        if not (math.isfinite(self.coefficient_error) and self.coefficient_error >= 0):
            raise ParameterError(explain("coefficient_error", self.coefficient_error, "a finite bound >= 0",
                                         "pass the backend's documented per-entry error (0 when exact)"))
        f = _frac_bits(specs, self.records, self.max_frac_bits)
        object.__setattr__(self, "frac_bits", f)
        for name, members, eps, delta, dim in specs:
            extra, cross_dim = approximation_inflation(self, members, self.coefficient_error)
            group = _group(name, members, eps, delta + extra, dim + cross_dim, self.grid_bits)
            groups.update(dict.fromkeys(members, group))
        object.__setattr__(self, "groups", groups)

    @property
    def grid_bits(self) -> int:
        """The release grid 2^-k with k = 2f + 2: a cross-party share at scale 2^(2f) times any of the
        monomial factors (1, 2, -2, 1/4) lands on it by an exact shift in the ring."""
        return 2 * self.frac_bits + 2

    def round_features(self, values: npt.ArrayLike) -> FloatArray:
        """Features (or labels) on the grid 2^-f the secure products encode them on; every party's local
        coefficients use the same rounded values, so the released objective is that of the rounded data."""
        out: FloatArray = np.ldexp(np.rint(np.ldexp(np.asarray(values, dtype=np.float64), self.frac_bits)),
                                   -self.frac_bits)
        return out

    def _bottom_up_groups(self, live: list[Block], l1: tuple[float, ...],
                          ) -> list[tuple[str, tuple[Block, ...], float, float, int]]:
        spec = dict(self.bottom_up or {})
        single = tuple(spec.get("single", ()))
        cross = {(min(k, l), max(k, l)): e for (k, l), e in dict(spec.get("cross", {})).items()}  # noqa: E741
        label = self.partition.label_party
        by_parties: dict[frozenset[int], list[Block]] = {}
        for b in live:
            by_parties.setdefault(self.partition.involved(b), []).append(b)
        specs: list[tuple[str, tuple[Block, ...], float, float, int]] = []
        for parties, members in by_parties.items():
            if len(parties) == 1:
                (k,) = parties
                if k >= len(single):
                    raise ParameterError(explain("bottom_up['single']", single, f"a budget for party {k}",
                                                 "give every party a single-party budget eps^k"))
                eps = _positive(single[k], f"eps^{k}")
                delta = sens.single_party_sensitivity(self.objective, l1, label, k)
                name = f"g/{k}"
            else:
                k, l = sorted(parties)  # noqa: E741
                if (k, l) not in cross:
                    raise ParameterError(explain("bottom_up['cross']", sorted(cross), f"a budget for pair ({k}, {l})",
                                                 "parties k and l agree on eps^kl for their cross coefficients"))
                eps = _positive(cross[(k, l)], f"eps^{k}{l}")
                delta = sens.cross_party_sensitivity(self.objective, l1, label, k, l)
                name = f"h/{k}/{l}"
            specs.append((name, tuple(members), eps, delta, sum(_block_dim(self.partition, b) for b in members)))
        return specs

    # -- public summaries ---------------------------------------------------------------------------------
    @property
    def unique_groups(self) -> tuple[NoiseGroup, ...]:
        seen: dict[str, NoiseGroup] = {}
        for g in self.groups.values():
            seen.setdefault(g.name, g)
        return tuple(seen.values())

    @property
    def total_epsilon(self) -> float:
        """The guarantee on D: eps (top-down) or the composition of every group's budget (bottom-up)."""
        return sum(g.epsilon for g in self.unique_groups)

    def per_party_epsilon(self) -> tuple[float, ...]:
        """Each party's guarantee on its own columns (Theorem 2 top-down; eps^k + sum_l eps^kl bottom-up)."""
        l1, label = self.party_l1 or (), self.partition.label_party
        if self.epsilon is not None:
            group = self.unique_groups[0]
            out_td = []
            for k in range(self.partition.parties):
                mine = tuple(b for b in group.blocks if k in self.partition.involved(b))
                extra, _ = approximation_inflation(self, mine, self.coefficient_error)
                out_td.append((sens.party_sensitivity(self.objective, l1, label, k) + extra)
                              / group.sensitivity * self.epsilon)
            return tuple(out_td)
        out = []
        for k in range(self.partition.parties):
            out.append(sum(g.epsilon for g in self.unique_groups
                           if any(k in self.partition.involved(b) for b in g.blocks)))
        return tuple(out)

    def costs(self) -> tuple[PrivacyCost, ...]:
        """What the release spends on D, one cost per group (for a ledger)."""
        return tuple(PrivacyCost(epsilon=g.epsilon, mechanism="laplace",
                                 noise_multiplier=g.scale / g.sensitivity) for g in self.unique_groups)

    def quad_scale(self) -> float:
        """The largest Laplace scale on a quadratic coefficient (sets the solver's trimming floor)."""
        scales = [g.scale for b, g in self.groups.items() if b[0] == "quad"]
        return max(scales, default=0.0)

    def to_wire(self) -> dict[str, Any]:
        """The plan as plain data (what the server sends the parties)."""
        return {"objective": self.objective, "columns": [list(c) for c in self.partition.columns],
                "label_party": self.partition.label_party, "party_l1": list(self.party_l1 or ()),
                "epsilon": self.epsilon, "records": self.records, "coefficient_error": self.coefficient_error,
                "max_frac_bits": self.max_frac_bits,
                "bottom_up": None if self.bottom_up is None else {
                    "single": list(self.bottom_up.get("single", ())),
                    "cross": [[k, l, e] for (k, l), e in dict(self.bottom_up.get("cross", {})).items()]}}  # noqa: E741

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> FMPlan:
        try:
            bottom = data["bottom_up"]
            spec = None if bottom is None else {
                "single": tuple(bottom["single"]),
                "cross": {(int(k), int(l)): float(e) for k, l, e in bottom["cross"]}}  # noqa: E741
            return cls(objective=data["objective"],
                       partition=ColumnPartition(tuple(tuple(c) for c in data["columns"]), int(data["label_party"])),
                       party_l1=tuple(float(c) for c in data["party_l1"]),
                       epsilon=None if data["epsilon"] is None else float(data["epsilon"]), bottom_up=spec,
                       records=None if data["records"] is None else int(data["records"]),
                       coefficient_error=float(data["coefficient_error"]), max_frac_bits=int(data["max_frac_bits"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(explain("plan", data, "an FMPlan.to_wire() mapping",
                                         "send the server's plan")) from exc


def plan_for_columns(objective: FMObjective, d: int, *, partition: Sequence[Sequence[int]] | None, label_party: int,
                     fit_intercept: bool, row_l1: Sequence[float] | None, epsilon: float | None,
                     bottom_up: Mapping[str, Any] | None = None) -> FMPlan:
    """The public plan of a fit on ``d`` feature columns split by ``partition`` (default: one party).

    With ``fit_intercept`` the label party also holds the public constant column ``d`` (adding 1 to its row L1
    bound); ``row_l1`` defaults to each party's column count (features in [-1, 1]). What the estimators'
    ``plan_for`` and a deployed party compute alike."""
    cols = [tuple(c) for c in (partition if partition is not None else [range(d)])]
    if fit_intercept:
        cols = [(*c, d) if k == label_party else c for k, c in enumerate(cols)]
    part = ColumnPartition(tuple(cols), label_party)
    if row_l1 is None:
        l1 = tuple(float(len(c)) for c in cols)
    else:
        if len(row_l1) != len(cols):
            raise ShapeMismatchError(explain("row_l1", row_l1, f"{len(cols)} bounds, one per party",
                                             "give each party's public row L1 bound"))
        l1 = tuple(float(c) + (1.0 if fit_intercept and k == label_party else 0.0) for k, c in enumerate(row_l1))
    return FMPlan(objective, part, party_l1=l1, epsilon=epsilon, bottom_up=bottom_up)


def _positive(value: float, name: str) -> float:
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ParameterError(explain(name, value, "a finite privacy budget > 0", f"pass e.g. {name}=1.0"))
    return v


def _group(name: str, blocks: tuple[Block, ...], eps: float, delta: float, dim: int, k: int) -> NoiseGroup:
    units = Fraction(grid_l1_sensitivity(delta, k, max(dim, 1))) / Fraction(eps)
    return NoiseGroup(name, blocks, eps, delta, dim, k, units)


def monomial_factor(objective: FMObjective, block: Block) -> float:
    """What a cross-party product entry is multiplied by to give its monomial coefficient: ``2q`` for quad
    blocks (2 or 1/4), ``-2`` (linear, ``lambda_a = -2 sum y x``) or 1 (logistic, ``sum (1/2 - y) x``) for lin."""
    if block[0] == "quad":
        return 2.0 if objective == "linear" else 0.25
    return -2.0 if objective == "linear" else 1.0


def approximation_inflation(plan: FMPlan, blocks: Sequence[Block], error: float) -> tuple[float, int]:
    """Sensitivity added by approximate cross products, and the extra snapped coordinates.

    An entry computed with error at most ``E`` can differ between neighbouring datasets by its exact change plus
    ``2E``; summed over the cross-party monomials of ``blocks`` (times their factor), that is the inflation.
    Each such monomial is snapped twice (two real shares), so it also counts twice in the grid's ``+dim``.
    """
    part = plan.partition
    extra, count = 0.0, 0
    for block in blocks:
        if block[0] == "const" or len(part.involved(block)) < 2:
            continue
        entries = math.prod(block_shape(part, block))
        extra += 2.0 * error * abs(monomial_factor(plan.objective, block)) * entries
        count += entries
    return (extra, count) if error > 0 else (0.0, 0)


def _frac_bits(specs: list[tuple[str, tuple[Block, ...], float, float, int]], records: int | None,
               cap: int = 20) -> int:
    """Fractional bits f of the features; the release grid is 2^-(2f + 2) (see :meth:`FMPlan.grid_bits`).

    The finest grid any group wants has about 2^40 steps per noise scale (:func:`default_grid_bits`); a
    coarser one keeps the largest noise (and, with n known, the largest coefficient 4n) inside int64.
    """
    wanted = min((default_grid_bits(delta / eps) for _, _, eps, delta, _ in specs if delta > 0), default=40)
    f = (wanted - 2) // 2
    if records is not None:  # |coefficient| <= 2n and 2n 2^(2f+2) must stay below 2^60
        f = min(f, (57 - int(records).bit_length()) // 2)
    return max(_MIN_FRAC_BITS, min(_MAX_FRAC_BITS, cap, f))


def monomial_mask(partition: ColumnPartition, block: Block, party: int) -> npt.NDArray[np.bool_]:
    """Which entries of a block (matrix form) are released monomials whose noise ``party`` adds.

    Quad (k, k) releases its entries with global ``a <= b``, quad (k, l) every entry; the noise of monomial
    ``{a, b}`` is added by the holder of ``min(a, b)``, of ``lambda_a`` by the holder of ``a``.
    """
    shape = block_shape(partition, block)
    if block[0] == "const":
        return np.array(party == partition.label_party)
    if block[0] == "lin":
        held = partition.columns[block[1]]  # type: ignore[misc]
        return np.array([partition.owner(int(a)) == party for a in held], dtype=bool).reshape(shape)
    rows, cols, released = _released(partition, block)
    if not released.size:
        return released
    owners = np.array([partition.owner(a) for a in range(partition.d)], dtype=np.int64)
    mine: npt.NDArray[np.bool_] = released & (owners[np.minimum.outer(rows, cols)] == party)
    return mine


class PartyNoise:
    """A party's noise draws for one run: rows of monomial noise from ``noise_root``, drawn once and cached.

    Never serialised or sent: only the noisy coefficients leave the party.
    """

    def __init__(self, plan: FMPlan, noise_root: RandomSource) -> None:
        self.plan = plan
        self._root = noise_root
        self._rows: dict[int, IntArray] = {}

    def row(self, a: int) -> IntArray:
        """Grid-unit noise of monomials ``(a, b)``, ``b >= a``, at index ``b - a`` (0 where no group)."""
        if a not in self._rows:
            part = self.plan.partition
            partners = np.array([part.owner(b) for b in range(a, part.d)], dtype=np.int64)
            out = np.zeros(part.d - a, dtype=np.int64)
            owner_a = part.owner(a)
            if self.plan.epsilon is not None:
                group = self.plan.groups.get(("quad", owner_a, owner_a))
                if group is not None:  # top-down: one scale for every live block
                    out[:] = discrete_laplace(group.units_scale, part.d - a, rng=self._root.spawn(f"quad/{a}"))
            else:
                for l in np.unique(partners):  # noqa: E741
                    grp = self.plan.groups.get(("quad", min(owner_a, int(l)), max(owner_a, int(l))))
                    sel = partners == l
                    if grp is not None:
                        out[sel] = discrete_laplace(grp.units_scale, int(sel.sum()),
                                                    rng=self._root.spawn(f"quad/{a}/{int(l)}"))
            self._rows[a] = out
        return self._rows[a]

    def single(self, label: str, group: NoiseGroup) -> int:
        return int(discrete_laplace(group.units_scale, 1, rng=self._root.spawn(label))[0])


def _released(partition: ColumnPartition, block: Block) -> tuple[IntArray, IntArray, npt.NDArray[np.bool_]]:
    rows = np.array(partition.columns[block[1]], dtype=np.int64)  # type: ignore[misc]
    cols = np.array(partition.columns[block[2]], dtype=np.int64)  # type: ignore[misc]
    if block[1] == block[2]:  # type: ignore[misc]
        return rows, cols, np.less_equal.outer(rows, cols)
    return rows, cols, np.ones((rows.size, cols.size), dtype=bool)


def _check_block(plan: FMPlan, block: Block) -> NoiseGroup:
    group = plan.groups.get(block)
    if group is None:
        raise ParameterError(explain("block", block, f"one of {sorted(map(str, plan.groups))}",
                                     "release only the blocks the plan lists"))
    return group


def local_units(plan: FMPlan, block: Block, values: npt.ArrayLike) -> UnitArray:
    """A block computed in the clear by one party, in matrix form (``M`` entries, ``lambda_a`` or the constant),
    as monomial grid units: off-diagonal monomials are ``2 M_ab``; unreleased entries (the lower triangle of a
    single-party quadratic block) are 0. Values are snapped to the grid (exactly, :func:`snap_to_grid`)."""
    group = _check_block(plan, block)
    part = plan.partition
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != block_shape(part, block):
        raise ShapeMismatchError(explain(f"values of {block}", arr.shape, str(block_shape(part, block)),
                                         "compute the planned block"))
    if block[0] == "quad":
        rows, cols, released = _released(part, block)
        arr = np.where(np.equal.outer(rows, cols), 1.0, 2.0) * arr * released
    return snap_to_grid(arr, group.grid_bits).astype(np.uint64)


def cross_units(plan: FMPlan, block: Block, share: npt.ArrayLike, scale_bits: int) -> UnitArray:
    """A party's additive ring share (Z_2^64, scale 2^scale_bits) of a cross-party product, as monomial grid units.

    The shares are of ``X^a^T X^b`` (quad blocks) or, for ``lin`` blocks, of ``r^T X^j`` with ``r = 1/2 - y``
    (logistic) or ``y^T X^j`` (linear). The monomial factor is a signed power of two (``2q`` = 1/4 or 2,
    1, or -2), so the conversion is an exact shift (and negation) modulo 2^64.
    """
    group = _check_block(plan, block)
    part = plan.partition
    arr = np.asarray(share)
    if arr.dtype != np.uint64 or arr.shape != block_shape(part, block) or block[0] == "const":
        raise ShapeMismatchError(explain(f"share of {block}", (arr.dtype, arr.shape),
                                         f"uint64 ring elements of shape {block_shape(part, block)}",
                                         "pass the secure product's share"))
    if block[0] == "quad" and block[1] == block[2]:  # type: ignore[misc]
        raise ParameterError(explain("block", block, "a cross-party block", "use local_units for it"))
    if block[0] == "quad":
        exponent, negate = (1, False) if plan.objective == "linear" else (-2, False)
    else:
        exponent, negate = (1, True) if plan.objective == "linear" else (0, False)
    shift = group.grid_bits - scale_bits + exponent
    if shift < 0:
        raise ParameterError(explain("share scale", scale_bits, f"at most {group.grid_bits + exponent}",
                                     "encode the products with the plan's frac_bits"))
    with np.errstate(over="ignore"):
        out = (arr.astype(np.uint64) << np.uint64(shift)).astype(np.uint64)
        if negate:
            out = (np.uint64(0) - out).astype(np.uint64)
    return out


def cross_units_real(plan: FMPlan, block: Block, share: npt.ArrayLike) -> UnitArray:
    """A party's real-valued additive share of a cross-party product (CKKS) as monomial grid units: the share
    times the monomial factor, snapped to the grid (the plan's sensitivity counts the second snap and the
    backend's error, see :func:`approximation_inflation`)."""
    group = _check_block(plan, block)
    arr = np.asarray(share, dtype=np.float64)
    if arr.shape != block_shape(plan.partition, block) or len(plan.partition.involved(block)) < 2:
        raise ShapeMismatchError(explain(f"share of {block}", arr.shape, str(block_shape(plan.partition, block)),
                                         "pass the cross-party product's share"))
    return snap_to_grid(monomial_factor(plan.objective, block) * arr, group.grid_bits).astype(np.uint64)


def add_noise(plan: FMPlan, party: int, block: Block, units: UnitArray, noise: PartyNoise) -> UnitArray:
    """``units`` plus the noise ``party`` owns in ``block`` (:func:`monomial_mask`), modulo 2^64."""
    group = _check_block(plan, block)
    part = plan.partition
    mask = monomial_mask(part, block, party)
    out = np.array(units, dtype=np.uint64, copy=True)
    if block[0] == "const":
        if bool(mask):
            out = (out + np.int64(noise.single("const", group)).astype(np.uint64)).astype(np.uint64)
        return out
    add = np.zeros(out.shape, dtype=np.int64)
    if block[0] == "lin":
        for i, a in enumerate(part.columns[block[1]]):  # type: ignore[misc]
            if mask[i]:
                add[i] = noise.single(f"lin/{a}", group)
    else:
        rows, cols, _ = _released(part, block)
        lo, hi = np.minimum.outer(rows, cols), np.maximum.outer(rows, cols)
        for a in np.unique(lo[mask]):
            sel = mask & (lo == a)
            add[sel] = noise.row(int(a))[hi[sel] - a]
    with np.errstate(over="ignore"):
        return (out + add.astype(np.uint64)).astype(np.uint64)


def assemble_release(plan: FMPlan, released: Mapping[Block, UnitArray]) -> QuadraticObjective:
    """The server's noisy objective from every block's units summed modulo 2^64 (matrix form, symmetric).

    The sum of the parties' units is the block's monomials plus noise, exactly, as a two's-complement int64.
    """
    part = plan.partition
    values: dict[Block, FloatArray] = {}
    for block in part.blocks():
        shape = block_shape(part, block)
        group = plan.groups.get(block)
        if group is None:  # a block that carries no data (logistic constant)
            values[block] = np.zeros(shape)
            continue
        units = np.asarray(released[block], dtype=np.uint64).view(np.int64)
        mono = np.ldexp(units.astype(np.float64), -group.grid_bits)
        if block[0] == "quad":
            rows = np.array(part.columns[block[1]], dtype=np.int64)  # type: ignore[misc]
            cols = np.array(part.columns[block[2]], dtype=np.int64)  # type: ignore[misc]
            if block[1] == block[2]:  # type: ignore[misc]
                upper = np.less_equal.outer(rows, cols)
                mono = np.where(upper, mono, mono.T)
            mono = mono / np.where(np.equal.outer(rows, cols), 1.0, 2.0)
        values[block] = mono
    return QuadraticObjective.from_blocks(part, values)
