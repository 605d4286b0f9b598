"""Splitting a dataset between parties: by columns (vertical) or by rows (horizontal).

Every partitioner assigns each column (vertical) or each row (horizontal) to exactly one party, and refuses
specifications that would drop or duplicate one. Randomised partitioners take ``rng`` (a
:class:`~mpdp.randomness.RandomSource`); the partition itself is experimental setup, not a private release.

Vertical
    :func:`vertical_by_groups` (named attribute groups, e.g. Adult's ``demographic`` / ``financial``, or a
    CLI spec ``"age,sex;income,hours"``), :func:`vertical_by_sizes` (K parties holding given numbers of
    attributes, or near-equal numbers). Categorical attributes move with all their one-hot columns.
    One party holds the label (``label_party``).

Horizontal
    :func:`horizontal_by_fractions` (e.g. 40/30/10 % with a 20 % test set, paper 001),
    :func:`horizontal_equal` (m near-equal parts, down to one record each, paper 003),
    :func:`horizontal_by_anchors` (paper 004: each agent gets an anchor value of a numeric attribute drawn
    uniformly from its public range, and each record goes to agent i with probability proportional to
    1 / |x_a - a_i|).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset
from mpdp.errors import DomainError, ParameterError, ShapeMismatchError, explain
from mpdp.randomness import RandomSource, resolve

__all__ = [
    "HorizontalPartition",
    "VerticalPartition",
    "VerticalSlice",
    "horizontal_by_anchors",
    "horizontal_by_fractions",
    "horizontal_equal",
    "parse_partition_spec",
    "vertical_by_groups",
    "vertical_by_sizes",
]


# -- vertical ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VerticalSlice:
    """What party ``index`` holds: its attributes' columns of X (and values), and y if it is the label party."""

    index: int
    names: tuple[str, ...]
    columns: tuple[int, ...]
    X: npt.NDArray[np.float64]
    y: npt.NDArray[np.float64] | None
    attributes: tuple[Attribute, ...]
    values: npt.NDArray[np.float64] | None

    @property
    def holds_label(self) -> bool:
        return self.y is not None


@dataclass(frozen=True)
class VerticalPartition:
    """Columns per party: ``names[k]`` (attribute or feature names) and ``columns[k]`` (indices into X)."""

    names: tuple[tuple[str, ...], ...]
    columns: tuple[tuple[int, ...], ...]
    label_party: int = 0

    def __post_init__(self) -> None:
        if len(self.names) != len(self.columns) or not self.names:
            raise ShapeMismatchError(explain("partition", (len(self.names), len(self.columns)),
                                             "one name group and one column group per party (>= 1 party)",
                                             "build it with vertical_by_groups or vertical_by_sizes"))
        if not 0 <= self.label_party < len(self.names):
            raise ParameterError(explain("label_party", self.label_party, f"an index in 0..{len(self.names) - 1}",
                                         "name the party that holds the label"))

    @property
    def parties(self) -> int:
        return len(self.names)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Encoded columns per party (d_k in the papers)."""
        return tuple(len(c) for c in self.columns)

    def slices(self, data: Dataset) -> list[VerticalSlice]:
        """Each party's view of ``data``; only the label party's slice carries y."""
        out = []
        for k, (names, cols) in enumerate(zip(self.names, self.columns, strict=True)):
            attr_idx = [data.attribute_names.index(n) for n in names if n in data.attribute_names]
            out.append(VerticalSlice(
                index=k, names=names, columns=cols, X=data.X[:, list(cols)],
                y=data.y.copy() if k == self.label_party else None,
                attributes=tuple(data.attributes[i] for i in attr_idx),
                values=None if data.values is None or not attr_idx else data.values[:, attr_idx],
            ))
        return out

    def as_config(self) -> tuple[tuple[str, ...], ...]:
        """The form :class:`mpdp.learning.spec.run.RunConfig` carries (names per party)."""
        return self.names


def _units(data: Dataset) -> tuple[str, ...]:
    """The indivisible column units: attributes when the dataset has them, else features."""
    return data.attribute_names or data.feature_names


def parse_partition_spec(spec: str) -> tuple[tuple[str, ...], ...]:
    """``"age,sex;income,hours"`` -> ``(("age", "sex"), ("income", "hours"))`` (one group per party)."""
    groups = tuple(tuple(name.strip() for name in part.split(",") if name.strip()) for part in spec.split(";"))
    if not spec.strip() or any(not g for g in groups):
        raise ParameterError(explain("partition", spec, "groups of column names separated by ';', names by ','",
                                     'write e.g. --partition "age,sex;income,hours-per-week"'))
    return groups


def vertical_by_groups(
    data: Dataset, groups: Sequence[Sequence[str] | str] | str, *, label_party: int = 0
) -> VerticalPartition:
    """One party per group of attribute names; a group may also be a group name of ``data.groups``.

    ``groups`` is a sequence (one entry per party) or a CLI spec string for :func:`parse_partition_spec`.
    Every attribute (or feature, for data without an attribute view) must appear in exactly one group.
    """
    if isinstance(groups, str):
        groups = parse_partition_spec(groups)
    units = _units(data)
    expanded: list[tuple[str, ...]] = []
    for group in groups:
        members = (group,) if isinstance(group, str) else tuple(group)
        names: list[str] = []
        for member in members:
            names.extend(data.groups[member] if member in data.groups and member not in units else (member,))
        expanded.append(tuple(names))
    seen: dict[str, int] = {}
    for k, group_names in enumerate(expanded):
        if not group_names:
            raise ParameterError(explain(f"group {k}", group_names, "at least one column",
                                         "give every party a column"))
        for name in group_names:
            if name not in units:
                raise ParameterError(explain("column", name, f"a column of {data.name}: {list(units)}"
                                             + (f" or a group {sorted(data.groups)}" if data.groups else ""),
                                             "check the spelling (`mpdp datasets show` lists the columns)"))
            if name in seen:
                raise ParameterError(explain("column", name, "in exactly one party's group",
                                             f"remove it from group {seen[name]} or group {k}"))
            seen[name] = k
    missing = [u for u in units if u not in seen]
    if missing:
        raise ParameterError(explain("partition", f"columns not assigned: {missing}",
                                     "every column held by exactly one party", "add them to a group"))
    return VerticalPartition(tuple(expanded), tuple(data.columns_of(g) for g in expanded), label_party)


def vertical_by_sizes(
    data: Dataset, sizes: Sequence[int] | None = None, *, parties: int | None = None, label_party: int = 0
) -> VerticalPartition:
    """Consecutive blocks of ``sizes[k]`` attributes (features without an attribute view) per party.

    With ``sizes=None``, ``parties`` near-equal blocks (sizes differ by at most one).
    """
    units = _units(data)
    if sizes is None:
        if parties is None or parties < 1:
            raise ParameterError(explain("parties", parties, "an int >= 1", "pass sizes= or parties="))
        if parties > len(units):
            raise ParameterError(explain("parties", parties, f"at most {len(units)} (the columns of {data.name})",
                                         "use fewer parties; each must hold a column"))
        base, extra = divmod(len(units), parties)
        sizes = [base + (1 if k < extra else 0) for k in range(parties)]
    if any(int(s) < 1 for s in sizes) or sum(sizes) != len(units):
        raise ParameterError(explain("sizes", list(sizes), f"positive sizes summing to {len(units)}",
                                     "give every party at least one column and assign all of them"))
    bounds = np.cumsum([0, *sizes])
    groups = [units[bounds[k]:bounds[k + 1]] for k in range(len(sizes))]
    return vertical_by_groups(data, groups, label_party=label_party)


# -- horizontal ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HorizontalPartition:
    """Rows per party (``indices[k]``, sorted) and held-out test rows, over the dataset ``data``."""

    data: Dataset
    indices: tuple[npt.NDArray[np.int64], ...]
    test_indices: npt.NDArray[np.int64] | None = None

    @property
    def parties(self) -> int:
        return len(self.indices)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(int(i.size) for i in self.indices)

    def party(self, k: int) -> Dataset:
        return self.data.rows(self.indices[k])

    def party_data(self) -> list[Dataset]:
        return [self.party(k) for k in range(self.parties)]

    @property
    def test(self) -> Dataset | None:
        return None if self.test_indices is None else self.data.rows(self.test_indices)

    @property
    def train(self) -> Dataset:
        """All parties' rows together (the centralised baseline)."""
        return self.data.rows(np.sort(np.concatenate(self.indices)))

    def assignment(self) -> npt.NDArray[np.int64]:
        """Party index of every row of ``data``; -1 for test rows."""
        out = np.full(self.data.n, -1, dtype=np.int64)
        for k, idx in enumerate(self.indices):
            out[idx] = k
        return out


def _counts(total: int, fractions: Sequence[float]) -> list[int]:
    """Largest-remainder rounding of ``fractions * total`` to integers summing to ``total``."""
    raw = np.asarray(fractions, dtype=np.float64) * total
    counts = np.floor(raw).astype(np.int64)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: total - int(counts.sum())]] += 1
    return [int(c) for c in counts]


def horizontal_by_fractions(
    data: Dataset, fractions: Sequence[float], *, test: float = 0.0, rng: RandomSource | None = None
) -> HorizontalPartition:
    """Random disjoint row sets of the given fractions, plus a test set; all fractions sum to 1.

    ``horizontal_by_fractions(data, (0.4, 0.3, 0.1), test=0.2)`` is paper 001's three parties.
    """
    fr = [float(f) for f in fractions]
    if not fr or any(not f > 0 for f in fr) or not 0 <= test < 1 or abs(sum(fr) + test - 1.0) > 1e-9:
        raise ParameterError(explain("fractions + test", (fr, test), "positive party fractions that sum to 1 with "
                                     "the test fraction", "e.g. fractions=(0.4, 0.3, 0.1), test=0.2"))
    parts = [*fr, test] if test > 0 else fr
    counts = _counts(data.n, parts)
    if any(c == 0 for c in counts):
        raise ParameterError(explain("row counts", counts, "at least one row per party and test set",
                                     f"use fewer parties or more data than {data.n} rows"))
    perm = resolve(rng).permutation(data.n)
    cuts = np.cumsum([0, *counts])
    blocks = [np.sort(perm[cuts[k]:cuts[k + 1]]) for k in range(len(counts))]
    if test > 0:
        return HorizontalPartition(data, tuple(blocks[:-1]), blocks[-1])
    return HorizontalPartition(data, tuple(blocks))


def horizontal_equal(data: Dataset, parties: int, *, rng: RandomSource | None = None) -> HorizontalPartition:
    """``parties`` random parts whose sizes differ by at most one (one record each when parties == n)."""
    if not 1 <= parties <= data.n:
        raise ParameterError(explain("parties", parties, f"1 <= parties <= {data.n} (rows of {data.name})",
                                     "use at most one party per record"))
    # Position i of a random permutation goes to party floor(i * parties / n): sizes differ by at most one.
    # One stable argsort by owner then lists every party's rows in increasing order, without a sort per party
    # (50,000 one-record parties stay cheap).
    owner = np.empty(data.n, dtype=np.int64)
    owner[resolve(rng).permutation(data.n)] = np.arange(data.n, dtype=np.int64) * parties // data.n
    rows = np.argsort(owner, kind="stable").astype(np.int64)
    cuts = np.searchsorted(owner[rows], np.arange(1, parties))
    return HorizontalPartition(data, tuple(np.split(rows, cuts)))


def horizontal_by_anchors(
    data: Dataset, attribute: str, parties: int, *, rng: RandomSource | None = None,
    min_distance: float | None = None,
) -> HorizontalPartition:
    """Paper 004's non-IID split: records go to agents near them on a numeric attribute.

    Agent i draws an anchor ``a_i`` uniformly from the attribute's public bounds; a record with value ``x``
    goes to agent i with probability proportional to ``1 / max(|x - a_i|, min_distance)``
    (``min_distance`` defaults to 1e-6 of the range, so a record sitting on an anchor is not a division by
    zero). Agents may receive no records; callers that need non-empty parties check ``sizes``.
    """
    if parties < 1 or parties > data.n:
        raise ParameterError(explain("parties", parties, f"1 <= parties <= {data.n}", "use fewer agents"))
    if attribute in data.attribute_names:
        j = data.attribute_names.index(attribute)
        attr = data.attributes[j]
        if attr.kind != "numeric" or attr.bounds is None or data.values is None:
            raise DomainError(explain("attribute", attribute, "a numeric attribute", "pick e.g. 'age'"))
        x, (lo, hi) = data.values[:, j], attr.bounds
    elif attribute in data.feature_names:
        x, (lo, hi) = data.X[:, data.feature_names.index(attribute)], (-1.0, 1.0)
    else:
        raise ParameterError(explain("attribute", attribute, f"a numeric column of {data.name}",
                                     "name a numeric attribute, e.g. 'age'"))
    rng = resolve(rng)
    anchors = lo + (hi - lo) * rng.random(parties)
    floor = (hi - lo) * 1e-6 if min_distance is None else float(min_distance)
    if not floor > 0:
        raise ParameterError(explain("min_distance", min_distance, "> 0", "pass a small positive distance"))
    u = rng.random(data.n)
    owner = np.empty(data.n, dtype=np.int64)
    for start in range(0, data.n, 4096):  # bounded memory: (chunk x parties) weights at a time
        chunk = x[start:start + 4096]
        weights = 1.0 / np.maximum(np.abs(chunk[:, None] - anchors[None, :]), floor)
        cdf = np.cumsum(weights, axis=1)
        pick = (cdf < (u[start:start + 4096] * cdf[:, -1])[:, None]).sum(axis=1)
        owner[start:start + 4096] = np.minimum(pick, parties - 1)
    return HorizontalPartition(data, tuple(np.flatnonzero(owner == k).astype(np.int64) for k in range(parties)))
