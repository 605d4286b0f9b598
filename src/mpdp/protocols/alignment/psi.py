"""The parties' side of private record alignment: ECDH private set intersection over ristretto255.

Parties ``P_0 .. P_{k-1}`` (``spec.parties``; ``P_0`` is the *leader*) each hold a column of identifiers and
a fresh secret scalar ``a_i``. ``H`` hashes a normalised identifier to the group
(:func:`mpdp.crypto.ristretto.hash_to_group`); exponentiation commutes, so ``F(x) = H(x)^(a_0 ... a_{k-1})``
is the same value whoever applied the keys in whichever order, and nobody can compute it alone.

1. Every party announces its number of identifiers (``psi-sizes``).
2. Every party shuffles its identifiers with a private random permutation, hashes them and applies its own
   key: its list ``L_i``.
3. ``k - 1`` ring hops (``psi-hop1`` ...): each party sends the list it holds to the next party and
   exponentiates the list it receives from the previous one. After the last hop party ``i`` holds the
   fully keyed list of party ``i + 1``, ``F(L_{i+1})``, in that owner's shuffled order, and sends it to the
   leader (``psi-full``).
4. The leader intersects the ``k`` lists of ``F`` values, orders the common values by their bytes (a
   pseudorandom order nobody chose) and sends each party the positions of those values in its shuffled list
   (``psi-result``). Each party undoes its shuffle: ``rows[r]`` is its row holding the ``r``-th common record.

Cost: each party hashes its own ``n_i`` identifiers and exponentiates ``sum_j n_j`` elements; it sends
``32 sum_j n_j`` bytes (about), in ``k + 2`` rounds. The leader also validates the ``k - 1`` lists it receives.

A party given a ``progress`` reporter (:mod:`mpdp.progress`) prints a phase line per step and a bar over the
elements it hashes and exponentiates, processed then in batches of :data:`BATCH` (the same bytes as one call:
every element is hashed and exponentiated on its own).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ristretto import ELEMENT_BYTES, exponentiate, hash_to_group, random_scalar, split_elements, validate
from mpdp.errors import (
    DatasetError,
    IntersectionTooSmallError,
    MalformedMessageError,
    ParameterError,
    PrivacyLeakWarning,
    ProtocolAbortError,
    explain,
)
from mpdp.progress import SILENT, Progress
from mpdp.protocols.alignment.ids import check_ids
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm, Party, ProtocolRun, run_protocol

__all__ = ["BATCH", "DOMAIN", "Alignment", "AlignmentParty", "AlignmentSpec", "align", "simulate_alignment"]

#: Elements per batch of the group operations when a terminal shows their progress.
BATCH = 8192

DOMAIN = b"mpdp/alignment/ristretto255/v1"
"""Domain separation of the hash to the group: no other use of ``H`` in mpdp shares it."""


@dataclass(frozen=True)
class AlignmentSpec:
    """What every party of one alignment agrees on.

    Attributes
    ----------
    parties:
        The participants in protocol order; ``parties[0]`` is the leader, who computes the intersection.
    min_intersection:
        Fewest common records accepted (default 100): a smaller intersection is refused by every party with
        :class:`~mpdp.errors.IntersectionTooSmallError` (too few rows to train on, and a small intersection
        of known people is itself a privacy hazard). At least 1: an empty intersection is always refused.
    case_sensitive:
        Compare identifiers without case-folding (see :mod:`mpdp.protocols.alignment.ids`).
    max_ids:
        Most identifiers any party may bring (default 50,000,000): bounds how many guesses a dishonest
        party can test against the others' columns in one run, and the memory a run may take.
    workers:
        Threads for this party's group operations (default: the CPUs it may use). Not part of the
        agreement; each party chooses its own.
    """

    parties: tuple[str, ...]
    min_intersection: int = 100
    case_sensitive: bool = False
    max_ids: int = 50_000_000
    workers: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        given: Any = self.parties
        if isinstance(given, str | bytes) or not isinstance(given, Sequence):
            raise ParameterError(explain("parties", self.parties, "two or more distinct party names",
                                         "name every party holding an id column, e.g. ('alice', 'bob')"))
        parties = tuple(self.parties)
        object.__setattr__(self, "parties", parties)
        if len(parties) < 2 or not all(isinstance(p, str) and p for p in parties) or len(set(parties)) != len(parties):
            raise ParameterError(explain("parties", parties, "two or more distinct party names",
                                         "name every party holding an id column, e.g. ('alice', 'bob')"))
        for name, low in (("min_intersection", 1), ("max_ids", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(explain(name, value, f"an int >= {low}", f"pass e.g. {name}=100"))
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise ParameterError(explain("workers", self.workers, "an int >= 1 or None", "pass e.g. workers=2"))

    @property
    def leader(self) -> str:
        return self.parties[0]

    def to_config(self) -> dict[str, Any]:
        """Plain JSON data (for a party configuration file); :meth:`from_config` reads it back."""
        return {"parties": list(self.parties), "min_intersection": self.min_intersection,
                "case_sensitive": self.case_sensitive, "max_ids": self.max_ids}

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, workers: int | None = None) -> AlignmentSpec:
        known = {"parties", "min_intersection", "case_sensitive", "max_ids"}
        unknown = sorted(set(config) - known)
        if unknown or "parties" not in config:
            raise ParameterError(explain("alignment config", sorted(config), f"keys among {sorted(known)}, with "
                                         "'parties'", "write e.g. {\"parties\": [\"alice\", \"bob\"]}"))
        return cls(parties=tuple(config["parties"]), min_intersection=config.get("min_intersection", 100),
                   case_sensitive=bool(config.get("case_sensitive", False)),
                   max_ids=config.get("max_ids", 50_000_000), workers=workers)


@dataclass(frozen=True)
class Alignment:
    """What one party learns: which of its rows are in the intersection, in the agreed order.

    ``rows[r]`` is this party's row index of the ``r``-th common record, the same record at every party, so
    ``my_table[alignment.rows]`` is aligned with every other party's table. ``size`` is the intersection size
    and ``set_sizes`` every party's number of identifiers (both revealed to all parties).
    """

    party: str
    rows: npt.NDArray[np.int64]
    size: int
    set_sizes: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        """``{"aligned_rows", "rows_per_party"}`` as run reports carry them."""
        return {"aligned_rows": self.size, "rows_per_party": dict(self.set_sizes)}

    def to_wire(self) -> dict[str, Any]:
        """Plain data for the codec (a forked party's result travels so); :meth:`from_wire` rebuilds it."""
        return {"party": self.party, "rows": self.rows, "size": self.size, "set_sizes": dict(self.set_sizes)}

    @classmethod
    def from_wire(cls, data: Any) -> Alignment:
        if isinstance(data, Alignment):
            return data
        if (not isinstance(data, dict) or set(data) != {"party", "rows", "size", "set_sizes"}
                or not isinstance(data["rows"], np.ndarray) or data["rows"].dtype != np.int64
                or data["rows"].shape != (data["size"],)):
            raise MalformedMessageError(explain("alignment", data, "Alignment.to_wire() data",
                                                "pass what to_wire() returned"))
        return cls(party=data["party"], rows=data["rows"], size=data["size"], set_sizes=dict(data["set_sizes"]))


def _check_size_message(value: Any, src: str, max_ids: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= max_ids:
        raise MalformedMessageError(explain(f"number of ids announced by {src}", value, f"an int in [1, {max_ids}]",
                                            f"{src} brings no ids or more than max_ids; check its input"))
    return value


def _check_batch(batch: Any, count: int, what: str) -> bytes:
    if not isinstance(batch, bytes) or len(batch) != ELEMENT_BYTES * count:
        got = len(batch) if isinstance(batch, bytes) else type(batch).__name__
        raise MalformedMessageError(explain(what, got, f"{ELEMENT_BYTES * count} bytes ({count} elements)",
                                            "the sender dropped, added or garbled elements: abort"))
    return batch


def _keyed(points: bytes | Sequence[bytes], key: bytes, spec: AlignmentSpec, progress: Progress, desc: str,
           what: str = "points") -> bytes:
    """``points`` (group elements, or identifiers to hash first) raised to ``key``: in one call, or batch by
    batch with a bar when ``progress`` shows one."""
    hashing = not isinstance(points, bytes)
    width = 1 if hashing else ELEMENT_BYTES  # items of ``points`` per element
    n = len(points) // width

    def run(first: int, last: int) -> bytes:
        part = points[first * width:last * width]
        group = hash_to_group(part, domain=DOMAIN, workers=spec.workers) if not isinstance(part, bytes) else part
        where = what if (first, last) == (0, n) else f"{what} from element {first}"
        return exponentiate(group, key, workers=spec.workers, what=where)

    if not progress.enabled or n <= BATCH:
        return run(0, n)
    out = []
    with progress.bar(desc, total=n, unit="id") as bar:
        for first in range(0, n, BATCH):
            last = min(first + BATCH, n)
            out.append(run(first, last))
            bar.update(last - first)
    return b"".join(out)


def align(comm: Comm, ids: Sequence[str], spec: AlignmentSpec, *, progress: Progress = SILENT) -> Alignment:
    """This party's side of the alignment (every party, the leader included, calls it with its own ids);
    ``progress`` reports its steps.

    Raises :class:`~mpdp.errors.DuplicateIdError` or :class:`~mpdp.errors.DatasetError` for unusable ids
    (before sending anything), :class:`~mpdp.errors.InvalidGroupElementError` or
    :class:`~mpdp.errors.MalformedMessageError` for a peer's invalid messages, and
    :class:`~mpdp.errors.IntersectionTooSmallError` when fewer than ``spec.min_intersection`` records are common.
    """
    me, parties = comm.name, spec.parties
    if me not in parties or not set(parties) <= set(comm.parties):
        raise ParameterError(explain("spec.parties", parties, f"{me} and other parties among {comm.parties}",
                                     "build the spec with the protocol's party names, leader first"))
    normal = check_ids(ids, case_sensitive=spec.case_sensitive, where=f"{me}'s id column")
    n = len(normal)
    if n > spec.max_ids:
        raise DatasetError(explain(f"{me}'s id column", f"{n} ids", f"at most max_ids = {spec.max_ids}",
                                   "raise max_ids in the agreed specification"))
    peers = [p for p in parties if p != me]
    comm.broadcast(n, label="psi-sizes", to=peers)
    announced = comm.gather(peers, label="psi-sizes")
    sizes = {p: n if p == me else _check_size_message(announced[p], p, spec.max_ids) for p in parties}
    if comm.rng.is_seeded:
        warnings.warn(f"alignment: {me}'s key drawn from a seeded {comm.rng!r}; anyone who knows the seed can "
                      "test any identifier against the messages. Use the default (fresh OS entropy) for real data.",
                      PrivacyLeakWarning, stacklevel=2)
    key = random_scalar(comm.rng)
    shuffle = comm.rng.permutation(n)
    progress.phase(f"alignment: hashing and keying {n:,} ids ({len(parties)} parties)")
    current = _keyed([normal[j] for j in shuffle.tolist()], key, spec, progress, "own ids")
    k, i = len(parties), parties.index(me)
    nxt, prv = parties[(i + 1) % k], parties[(i - 1) % k]
    for hop in range(1, k):
        comm.send(nxt, current, label=f"psi-hop{hop}")
        owner = parties[(i - hop) % k]
        what = f"{owner}'s list from {prv} (hop {hop})"
        received = _check_batch(comm.recv(prv, label=f"psi-hop{hop}"), sizes[owner], what)
        progress.phase(f"alignment: keying {owner}'s {sizes[owner]:,} ids (hop {hop} of {k - 1})")
        current = _keyed(received, key, spec, progress, f"{owner}'s ids", what)
    if me == spec.leader:
        progress.phase("alignment: intersecting the keyed lists")
        mine = _leader(comm, spec, sizes, current)
    else:
        comm.send(spec.leader, current, label="psi-full")
        mine = comm.recv(spec.leader, label="psi-result")
    return _finish(me, mine, shuffle, sizes, spec)


def _leader(comm: Comm, spec: AlignmentSpec, sizes: dict[str, int], own_full: bytes) -> dict[str, Any]:
    """Intersect the fully keyed lists, send every party its positions; the leader's own message."""
    parties, k = spec.parties, len(spec.parties)
    full = {parties[1 % k]: own_full}
    for i, holder in enumerate(parties[1:], start=1):
        owner = parties[(i + 1) % k]
        what = f"{owner}'s keyed list from {holder}"
        batch = _check_batch(comm.recv(holder, label="psi-full"), sizes[owner], what)
        validate(batch, workers=spec.workers, what=what)
        full[owner] = batch
    index: dict[str, dict[bytes, int]] = {}
    for owner in parties:
        elements = split_elements(full.pop(owner))
        index[owner] = dict(zip(elements, range(len(elements)), strict=True))
        if len(index[owner]) != len(elements):
            raise ProtocolAbortError(f"{owner}'s keyed list holds repeated elements: its ids were not distinct or a "
                                     "party tampered with the list. The alignment is aborted")
    smallest = min(parties, key=lambda p: sizes[p])
    common = set(index[smallest])
    for owner in parties:
        if owner != smallest:
            common.intersection_update(index[owner].keys())
    ordered = sorted(common)
    size = len(ordered)
    messages: dict[str, dict[str, Any]] = {}
    for owner in parties:
        where = index.pop(owner)
        positions = np.fromiter((where[e] for e in ordered), dtype=np.int64, count=size) \
            if size >= spec.min_intersection else None
        messages[owner] = {"size": size, "positions": positions}
    comm.scatter({p: messages[p] for p in parties[1:]}, label="psi-result")
    return messages[spec.leader]


def _finish(me: str, message: Any, shuffle: npt.NDArray[np.int64], sizes: dict[str, int],
            spec: AlignmentSpec) -> Alignment:
    """Check the leader's answer and undo this party's shuffle."""
    leader, n = spec.leader, sizes[me]
    if not isinstance(message, dict) or set(message) != {"size", "positions"}:
        raise MalformedMessageError(explain(f"result from {leader}", message, "{'size', 'positions'}",
                                            "the leader runs another protocol version: abort"))
    size, positions = message["size"], message["positions"]
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= min(sizes.values()):
        raise MalformedMessageError(explain(f"intersection size from {leader}", size,
                                            f"an int in [0, {min(sizes.values())}]", "abort: the leader is faulty"))
    if positions is None or size < spec.min_intersection:
        raise IntersectionTooSmallError(explain(
            "intersection", f"{size} common record(s)",
            f"at least {spec.min_intersection} (min_intersection; the leader's own minimum may be higher)",
            "check that every party uses the same id column and normalisation, or lower min_intersection "
            "knowingly (few common rows train poorly and single people out)"))
    if (not isinstance(positions, np.ndarray) or positions.dtype != np.int64 or positions.shape != (size,)
            or (size and (positions.min() < 0 or positions.max() >= n))
            or np.unique(positions).size != size):
        raise MalformedMessageError(explain(f"positions from {leader}", positions,
                                            f"{size} distinct int64 positions in [0, {n})",
                                            "abort: the leader is faulty or malicious"))
    return Alignment(party=me, rows=shuffle[positions], size=size, set_sizes=dict(sizes))


class AlignmentParty(Party):
    """A party holding one id column: ``run(comm)`` aligns it with the others' and returns its
    :class:`Alignment` (usable as a role of :func:`~mpdp.runtime.run_protocol`, ``mpdp party`` or a launcher)."""

    def __init__(self, name: str, ids: Sequence[str], spec: AlignmentSpec, *, progress: Progress = SILENT) -> None:
        super().__init__(name)
        if name not in spec.parties:
            raise ParameterError(explain("name", name, f"one of {spec.parties}", "add the party to the spec"))
        self._ids = ids
        self.spec = spec
        self.progress = progress

    def run(self, comm: Comm) -> Alignment:
        return align(comm, self._ids, self.spec, progress=self.progress)


def simulate_alignment(ids: Mapping[str, Sequence[str]], *, min_intersection: int = 100,
                       case_sensitive: bool = False, rng: RandomSource | None = None, workers: int | None = None,
                       timeout: float = 600.0, progress: Progress = SILENT,
                       ) -> tuple[dict[str, Alignment], ProtocolRun[Any]]:
    """Align the id columns of every party in memory (one thread per party); the first party leads.

    Returns every party's :class:`Alignment` and the run (traffic, seconds). ``progress`` shows the leader's
    steps (the others run the same steps alongside).
    """
    if not isinstance(ids, Mapping):
        raise ParameterError(explain("ids", type(ids).__name__, "{party: id column}", "pass a dict of columns"))
    spec = AlignmentSpec(parties=tuple(ids), min_intersection=min_intersection, case_sensitive=case_sensitive,
                         workers=workers)
    leader = spec.parties[0]
    run = run_protocol({p: AlignmentParty(p, column, spec, progress=progress.scoped(p) if p == leader else SILENT)
                        for p, column in ids.items()}, rng=rng, timeout=timeout)
    return dict(run.results), run
