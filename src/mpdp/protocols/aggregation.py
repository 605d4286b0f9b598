"""Dropout-tolerant secure aggregation of many clients' vectors through a few non-colluding aggregators.

Each client splits its fixed-point encoded vector ``x_i`` (or, for a weighted sum, ``(w_i x_i, w_i)``) into
additive shares over Z_2^l, one per aggregator, and sends each aggregator its share. The server collects from
every aggregator the set of clients whose share reached it, fixes the survivors (clients that reached *every*
aggregator), and aborts if more than ``max_dropouts`` clients are missing. Each aggregator adds its shares of
the survivors and either sends that partial sum to the server, which adds the partial sums (``reveal=True``),
or keeps it as its additive share of the aggregate for a further secure computation among the aggregators,
e.g. adding noise generated inside the MPC (:mod:`mpdp.protocols.noise`) before a single opening.

Four communication rounds: shares (clients -> aggregators), receipts (aggregators -> server), survivors
(server -> aggregators), partial sums (aggregators -> server).

Large cohorts run as *vectorized client groups*: a party listed with ``clients[name] = k`` runs ``k`` clients,
each a separate row of its input, of its random shares and of the messages it sends (a deployment sends the
rows separately; the simulation sends them in one message per aggregator, so byte counts are those of the
rows plus one envelope). A row missing from the rows sent to an aggregator is a client that dropped out
before reaching it.

Security
--------
Semi-honest (honest-but-curious) parties. Any coalition of the server, any set of clients and up to
``A - 1`` of the ``A`` aggregators learns nothing about an honest client's input beyond the aggregate over the
survivors: each share an aggregator receives is uniform in Z_2^l and independent of the input, and the partial
sums the server receives are uniform subject to adding up to the aggregate. All aggregators colluding learn
every input. ``max_dropouts`` bounds how few clients the released sum may cover (``M - max_dropouts``), so a
server cannot isolate a client by declaring the others dropped beyond that. Client dropouts are tolerated at any
point. With additive shares (the default) an aggregator that drops out aborts the round
(:class:`~mpdp.errors.ProtocolAbortError` naming it), because additive shares need every aggregator. With
``threshold = t`` the clients Shamir-share their vectors over Z_p, p = 2^61 - 1
(:class:`mpdp.crypto.shamir.ShamirScheme`): coalitions of up to ``t`` aggregators learn nothing, and the
aggregate survives up to ``A - t - 1`` aggregators dropping out at any point. Messages are authenticated and
ordered by the transport (mutual TLS over the network); malformed, replayed or out-of-step messages abort with a
typed error naming the sender.

Accuracy
--------
Inputs are encoded with ``fmt`` (default Z_2^64, f = 20): each entry is rounded to the grid 2^-f, so the
revealed sum differs from the exact sum of the survivors' real inputs by at most ``M * 2^-(f+1)`` per entry
(weighted: the same bound on ``sum w_i x_i`` and on ``sum w_i``). The ring sum is exact: the parameters are
refused at construction (:class:`~mpdp.errors.PrecisionError`) unless ``M * bound * 2^f < 2^(l-2)``, and a
client refuses an input beyond ``bound`` (:class:`~mpdp.errors.DomainError`), so nothing wraps around.

References
----------
Bonawitz et al., "Practical Secure Aggregation for Privacy-Preserving Machine Learning", CCS 2017 (threat model,
dropout threshold); Tian et al. and paper 003 (Jayaraman et al., NeurIPS 2018, section 2.2): aggregation by a few
non-colluding servers holding additive shares, the design used here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.crypto.ring import RingArray
from mpdp.errors import (
    DomainError,
    MalformedMessageError,
    ParameterError,
    PartyUnavailableError,
    PrecisionError,
    ProtocolAbortError,
    ShapeMismatchError,
    explain,
)
from mpdp.numeric import positive_finite, real_array
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.party import ProtocolRun, run_protocol
from mpdp.runtime.transport import Transport

__all__ = [
    "AggregateResult",
    "AggregationSpec",
    "AggregatorShare",
    "aggregation_aggregator",
    "aggregation_client",
    "aggregation_server",
    "simulate_aggregation",
]


@dataclass(frozen=True)
class AggregationSpec:
    """The public parameters of one secure aggregation, identical on every party.

    Parameters
    ----------
    server:
        The party that fixes the survivors and (with ``reveal``) learns the aggregate.
    aggregators:
        Two or more parties that receive the clients' shares. The server may be one of them.
    clients:
        Client party -> number of clients it runs (1 for a real client, more for a vectorized group).
    dim:
        Length of every client's vector.
    bound:
        Public bound on ``|x_ij|``; clients refuse larger inputs.
    weighted:
        Aggregate ``sum w_i x_i`` and ``sum w_i`` (weights kept private; e.g. record counts) instead of ``sum x_i``.
    weight_bound:
        Public bound on the weights (``0 <= w_i <= weight_bound``).
    max_dropouts:
        Most clients that may be missing; more abort the round.
    reveal:
        True: the server learns the aggregate. False: the aggregators keep additive shares of it.
    fmt:
        Fixed-point format of the shares.
    phase_timeout:
        Seconds an aggregator waits for a client before counting it as dropped (None: the Comm timeout).
    threshold:
        None: additive shares (every aggregator needed, coalitions of ``A - 1`` learn nothing). ``t`` in
        ``1 .. A - 1``: Shamir t-of-A shares over Z_(2^61 - 1): any ``t + 1`` aggregators finish the round,
        coalitions of ``t`` learn nothing. Requires ``reveal=True``.
    """

    server: str
    aggregators: tuple[str, ...]
    clients: Mapping[str, int]
    dim: int
    bound: float
    weighted: bool = False
    weight_bound: float = 1.0
    max_dropouts: int = 0
    reveal: bool = True
    fmt: FixedPointFormat = FAST
    phase_timeout: float | None = None
    threshold: int | None = None
    _order: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        aggregators: Any = self.aggregators
        if isinstance(aggregators, str | bytes) or not isinstance(aggregators, Sequence) or not all(
            isinstance(a, str) and a for a in aggregators
        ):
            raise ParameterError(explain("aggregators", self.aggregators, "a list of party names",
                                         "name at least two non-colluding aggregators, e.g. ['s', 'a']"))
        if not isinstance(self.clients, Mapping) or not all(isinstance(k, str) and k for k in self.clients):
            raise ParameterError(explain("clients", self.clients, "{party name: number of clients}",
                                         "list every client party, e.g. {'c1': 1}"))
        if not isinstance(self.server, str) or not self.server:
            raise ParameterError(explain("server", self.server, "a party name", "name the server"))
        object.__setattr__(self, "aggregators", tuple(self.aggregators))
        object.__setattr__(self, "clients", dict(self.clients))
        if len(self.aggregators) < 2 or len(set(self.aggregators)) != len(self.aggregators):
            raise ParameterError(explain("aggregators", self.aggregators, "two or more distinct parties",
                                         "name at least two non-colluding aggregators (the server may be one)"))
        if not self.clients or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1
                                       for k in self.clients.values()):
            raise ParameterError(explain("clients", self.clients, "{party: number of clients >= 1}",
                                         "list every client party with the clients it runs"))
        overlap = set(self.clients) & ({self.server} | set(self.aggregators))
        if overlap:
            raise ParameterError(explain("clients", sorted(overlap), "parties that are not server or aggregator",
                                         "run clients in their own parties"))
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or not 1 <= self.dim <= 1 << 40:
            raise ParameterError(explain("dim", self.dim, "an int >= 1", "pass the vector length"))
        for name in ("bound", "weight_bound"):
            object.__setattr__(self, name, positive_finite(getattr(self, name), name))
        if isinstance(self.max_dropouts, bool) or not isinstance(self.max_dropouts, int) or not (
            0 <= self.max_dropouts < self.total_clients
        ):
            raise ParameterError(explain("max_dropouts", self.max_dropouts,
                                         f"0 <= max_dropouts < {self.total_clients} clients",
                                         "allow fewer dropouts than there are clients"))
        worst = self.entry_bound
        if not self.fmt.raw_bound_ok(self.total_clients * worst, self.fmt.frac_bits):
            raise PrecisionError(
                explain("aggregate capacity", f"{self.total_clients} clients x {worst:g}",
                        f"a sum below {self.fmt.max_value:g} for {self.fmt}",
                        "lower bound/weight_bound, fewer fractional bits, or FixedPointFormat(128, ...)")
            )
        if self.phase_timeout is not None and not (isinstance(self.phase_timeout, int | float)
                                                   and not isinstance(self.phase_timeout, bool)
                                                   and self.phase_timeout > 0):
            raise ParameterError(explain("phase_timeout", self.phase_timeout, "seconds > 0 or None", "pass e.g. 30"))
        if self.threshold is not None:
            if isinstance(self.threshold, bool) or not isinstance(self.threshold, int) \
                    or not 1 <= self.threshold < len(self.aggregators):
                raise ParameterError(explain("threshold", self.threshold, f"an int in 1 .. {len(self.aggregators) - 1}",
                                             "pick how many colluding aggregators must learn nothing"))
            if not self.reveal:
                raise ParameterError(explain("reveal", False, "True with a Shamir threshold",
                                             "keep additive shares (threshold=None) for in-MPC noise"))
            if self.total_clients * worst * 2.0**self.fmt.frac_bits >= 2.0**59:
                raise PrecisionError(explain("aggregate capacity", f"{self.total_clients} clients x {worst:g}",
                                             "a sum below 2^59 grid units (the Shamir field is Z_(2^61 - 1))",
                                             "lower bound/weight_bound or fmt.frac_bits"))
        object.__setattr__(self, "_order", tuple(self.clients))

    @property
    def total_clients(self) -> int:
        return sum(self.clients.values())

    @property
    def width(self) -> int:
        """Entries per client contribution: ``dim`` (+1 for the weight)."""
        return self.dim + (1 if self.weighted else 0)

    @property
    def entry_bound(self) -> float:
        """Largest magnitude of one encoded entry of a contribution."""
        return max(self.bound * self.weight_bound, self.weight_bound) if self.weighted else float(self.bound)

    @property
    def scheme(self) -> Any:
        """The Shamir scheme of a threshold aggregation (None for additive shares)."""
        if self.threshold is None:
            return None
        from mpdp.crypto.shamir import MERSENNE_61, ShamirScheme

        return ShamirScheme(MERSENNE_61, len(self.aggregators), self.threshold)

    @property
    def error_bound(self) -> float:
        """Worst-case absolute error per revealed entry from fixed-point rounding: ``M * 2^-(f+1)``."""
        return self.total_clients * 2.0 ** -(self.fmt.frac_bits + 1)


@dataclass(frozen=True)
class AggregateResult:
    """What the server learns: the aggregate over the surviving clients and who they were.

    ``total`` is ``sum x_i`` (or ``sum w_i x_i``), ``weight_total`` is ``sum w_i`` (weighted only), ``count`` the
    number of survivors and ``dropped`` the rows of each client party that did not survive.
    """

    total: npt.NDArray[np.float64]
    count: int
    dropped: dict[str, list[int]]
    weight_total: float | None = None

    @property
    def mean(self) -> npt.NDArray[np.float64]:
        """The (weighted) average: ``total / weight_total``, or ``total / count`` when unweighted."""
        denominator = self.weight_total if self.weight_total is not None else float(self.count)
        if not denominator:
            raise ProtocolAbortError("the aggregate has zero total weight: no average exists")
        return self.total / denominator


@dataclass(frozen=True)
class AggregatorShare:
    """An aggregator's additive share (ring elements at scale 2^f) of the survivors' aggregate."""

    share: RingArray
    count: int
    survivors: dict[str, npt.NDArray[np.int64]]

    def opened(self, spec: AggregationSpec, values: npt.NDArray[np.float64]) -> AggregateResult:
        """The :class:`AggregateResult` of ``values`` opened from this share (e.g. with noise added first):
        the survivors it records, and for a weighted spec the weight total in entry ``spec.dim``."""
        dropped = {p: np.setdiff1d(np.arange(k), self.survivors.get(p, np.empty(0, np.int64))).tolist()
                   for p, k in spec.clients.items() if len(self.survivors.get(p, [])) < k}
        if spec.weighted:
            return AggregateResult(total=values[: spec.dim], count=self.count, dropped=dropped,
                                   weight_total=float(values[spec.dim]))
        return AggregateResult(total=values, count=self.count, dropped=dropped)


# -- clients -------------------------------------------------------------------------------------------------
def aggregation_client(comm: Comm, spec: AggregationSpec, values: Any, weights: Any = None, *,
                       lost: Mapping[str, Sequence[int]] | None = None) -> None:
    """A client party's side: share each client's row among the aggregators.

    Parameters
    ----------
    values:
        ``(k, dim)`` for a party running ``k`` clients, or ``(dim,)`` when ``k = 1``.
    weights:
        ``(k,)`` non-negative weights when ``spec.weighted`` (e.g. each client's record count).
    lost:
        Simulation only: aggregator -> rows whose share never reaches it (clients dropping out mid-protocol).
    """
    k = spec.clients.get(comm.name)
    if k is None:
        raise ParameterError(explain("client", comm.name, f"one of {list(spec.clients)}", "list it in spec.clients"))
    x = real_array(values, f"values of {comm.name}")
    if x.ndim == 1 and k == 1:
        x = x[None, :]
    if x.shape != (k, spec.dim):
        raise ShapeMismatchError(explain(f"values of {comm.name}", x.shape, f"({k}, {spec.dim})",
                                         "pass one row of length dim per client"))
    # min/max instead of isfinite + abs: two passes without temporaries; NaN propagates and fails the test
    if x.size and not (-spec.bound <= float(x.min()) and float(x.max()) <= spec.bound):
        raise DomainError(explain(f"values of {comm.name}", "entries beyond the bound or not finite",
                                  f"|x| <= bound = {spec.bound:g}", "clip the inputs to the declared bound"))
    if spec.weighted:
        if weights is None:
            raise ParameterError(explain("weights", None, f"{k} weights", "pass each client's weight"))
        w = real_array(weights, f"weights of {comm.name}").reshape(-1)
        if w.shape != (k,) or not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w > spec.weight_bound):
            raise DomainError(explain(f"weights of {comm.name}", w.shape if w.shape != (k,) else "out of range",
                                      f"{k} weights in [0, {spec.weight_bound:g}]", "declare a larger weight_bound"))
        contribution = np.concatenate([x * w[:, None], w[:, None]], axis=1)
    elif weights is not None:
        raise ParameterError(explain("weights", "given", "None for an unweighted aggregation",
                                     "set weighted=True in the spec"))
    else:
        contribution = x
    fmt, ring = spec.fmt, spec.fmt.ring
    shares: dict[str, RingArray] = {}
    scheme = spec.scheme
    if scheme is not None:  # Shamir: each element of each row gets its own random polynomial
        units = np.rint(contribution * 2.0**fmt.frac_bits).astype(np.int64)
        for agg, piece in zip(spec.aggregators, scheme.share(scheme.field.array(units), rng=comm.rng), strict=True):
            shares[agg] = piece.value
    else:
        mine = fmt.encode(contribution, name=f"contribution of {comm.name}")
        for agg in spec.aggregators[1:]:
            r = ring.random(comm.rng, (k, spec.width))  # row i: client i's own uniform mask for this aggregator
            shares[agg] = r
            mine = ring.sub(mine, r)
        shares[spec.aggregators[0]] = mine
    for agg in spec.aggregators:
        rows = np.arange(k, dtype=np.int64)
        share = shares[agg]
        if lost and agg in lost:
            rows = np.setdiff1d(rows, np.asarray(lost[agg], dtype=np.int64))
            share = share[rows] if scheme is not None else ring.apply(share, lambda a, r=rows: a[r])
        comm.send(agg, {"rows": rows, "shares": share}, label="agg.share")


# -- aggregators ---------------------------------------------------------------------------------------------
def _check_rows(msg: Any, src: str, k: int, spec: AggregationSpec) -> tuple[npt.NDArray[np.int64], RingArray]:
    if not isinstance(msg, dict) or set(msg) != {"rows", "shares"}:
        raise MalformedMessageError(explain(f"shares from {src}", type(msg).__name__, "{rows, shares}",
                                            f"{src} runs an incompatible aggregation"))
    rows, shares = msg["rows"], msg["shares"]
    ring = spec.fmt.ring
    if not isinstance(rows, np.ndarray) or rows.dtype != np.int64 or rows.ndim != 1 \
            or np.any(rows < 0) or np.any(rows >= k) or np.any(np.diff(rows) <= 0):
        raise MalformedMessageError(explain(f"rows from {src}", getattr(rows, "shape", rows),
                                            f"increasing client indices in [0, {k})", f"reject {src}"))
    if spec.threshold is not None:
        if not isinstance(shares, np.ndarray) or shares.dtype != np.uint64 or shares.shape != (len(rows), spec.width) \
                or np.any(shares >= np.uint64((1 << 61) - 1)):
            raise MalformedMessageError(explain(f"shares from {src}", getattr(shares, "shape", shares),
                                                f"({len(rows)}, {spec.width}) residues mod 2^61 - 1", f"reject {src}"))
        return rows, shares
    shares = ring.check(shares, f"shares from {src}", received=True)
    if ring.shape(shares) != (len(rows), spec.width):
        raise MalformedMessageError(explain(f"shares from {src}", ring.shape(shares), f"({len(rows)}, {spec.width})",
                                            f"reject {src}"))
    return rows, shares


def _receive_shares(comm: Comm, spec: AggregationSpec) -> dict[str, tuple[npt.NDArray[np.int64], RingArray]]:
    received: dict[str, tuple[npt.NDArray[np.int64], RingArray]] = {}
    for party in spec._order:
        try:
            msg = comm.recv(party, label="agg.share", timeout=spec.phase_timeout)
        except (PartyUnavailableError, ProtocolAbortError):
            # The party finished, failed, died or missed the deadline without reaching this aggregator: all
            # its clients dropped out. (If the whole run was aborted, the next step fails anyway.)
            continue
        received[party] = _check_rows(msg, party, spec.clients[party], spec)
    return received


def aggregation_aggregator(comm: Comm, spec: AggregationSpec) -> AggregatorShare | None:
    """An aggregator's side. Returns its :class:`AggregatorShare` when ``spec.reveal`` is False, else None.

    When the aggregator is also the server, call :func:`aggregation_server` instead: it runs both sides.
    """
    if comm.name not in spec.aggregators:
        raise ParameterError(explain("aggregator", comm.name, f"one of {spec.aggregators}", "check the spec"))
    if comm.name == spec.server:
        raise ParameterError(explain("role", "aggregation_aggregator on the server", "aggregation_server",
                                     "the server runs aggregation_server, which also aggregates"))
    received = _receive_shares(comm, spec)
    comm.send(spec.server, {p: rows for p, (rows, _) in received.items()}, label="agg.receipt")
    survivors = _survivor_message(comm.recv(spec.server, label="agg.survivors"), spec)
    share = _partial(received, survivors, spec)
    count = sum(len(r) for r in survivors.values())
    if spec.reveal:
        comm.send(spec.server, share, label="agg.partial")
        return None
    return AggregatorShare(share=share, count=count, survivors=survivors)


def _partial(received: Mapping[str, tuple[npt.NDArray[np.int64], RingArray]],
             survivors: Mapping[str, npt.NDArray[np.int64]], spec: AggregationSpec) -> RingArray:
    ring = spec.fmt.ring
    total = ring.zeros((spec.width,))
    for party, rows in survivors.items():
        if not len(rows):
            continue
        got_rows, shares = received[party]
        if len(got_rows) != len(rows):
            keep = np.isin(got_rows, rows)
            shares = shares[keep] if spec.threshold is not None else ring.apply(shares, lambda a, m=keep: a[m])
        total = _field_add(total, _field_sum(shares)) if spec.threshold is not None \
            else ring.add(total, ring.sum(shares, 0))
    return total


_P61 = (1 << 61) - 1


def _field_sum(values: RingArray) -> RingArray:
    """Column sums modulo 2^61 - 1 of residues (exact: 32-bit halves summed separately)."""
    lo = np.asarray(np.sum(values & np.uint64(0xFFFFFFFF), axis=0, dtype=np.uint64)).tolist()
    hi = np.asarray(np.sum(values >> np.uint64(32), axis=0, dtype=np.uint64)).tolist()
    return np.array([((int(h) << 32) + int(v)) % _P61 for h, v in zip(hi, lo, strict=True)], dtype=np.uint64)


def _field_add(a: RingArray, b: RingArray) -> RingArray:
    total = a + b  # < 2^62
    return np.where(total >= np.uint64(_P61), total - np.uint64(_P61), total)


def _survivor_message(msg: Any, spec: AggregationSpec) -> dict[str, npt.NDArray[np.int64]]:
    if isinstance(msg, dict) and set(msg) == {"abort"}:
        raise ProtocolAbortError(f"the server aborted the aggregation: {msg['abort']}")
    if not isinstance(msg, dict) or not set(msg) <= set(spec.clients) or not all(
        isinstance(v, np.ndarray) and v.dtype == np.int64 for v in msg.values()
    ):
        raise MalformedMessageError(explain("survivors from the server", type(msg).__name__,
                                            "{client party: int64 rows}", "check the server's version"))
    return dict(msg)


# -- server --------------------------------------------------------------------------------------------------
def aggregation_server(comm: Comm, spec: AggregationSpec) -> AggregateResult | AggregatorShare:
    """The server's side: fix the survivors, abort beyond ``max_dropouts``, add the partial sums.

    Returns the :class:`AggregateResult` (``spec.reveal``), or, when the aggregate stays shared and the server
    is an aggregator, its :class:`AggregatorShare` (otherwise an empty share with the survivor count).
    """
    if comm.name != spec.server:
        raise ParameterError(explain("server", comm.name, spec.server, "run aggregation_server on the server"))
    local = _receive_shares(comm, spec) if spec.server in spec.aggregators else None
    receipts: dict[str, dict[str, npt.NDArray[np.int64]]] = {}
    others = [a for a in spec.aggregators if a != spec.server]
    for agg in others:
        try:
            msg = comm.recv(agg, label="agg.receipt")
        except (PartyUnavailableError, ProtocolAbortError) as exc:
            if spec.threshold is None:
                _abort(comm, others, f"aggregator {agg} dropped out ({exc})")
            continue  # Shamir: the others can finish without it
        if not isinstance(msg, dict) or not set(msg) <= set(spec.clients):
            raise MalformedMessageError(explain(f"receipt from {agg}", type(msg).__name__,
                                                "{client party: rows}", f"check {agg}"))
        receipts[agg] = msg
    if local is not None:
        receipts[spec.server] = {p: rows for p, (rows, _) in local.items()}
    if spec.threshold is not None and len(receipts) < spec.threshold + 1:
        gone = [a for a in spec.aggregators if a not in receipts]
        _abort(comm, others, f"aggregators {gone} dropped out: {len(receipts)} remain, fewer than the "
               f"threshold + 1 = {spec.threshold + 1} needed to reconstruct")
    others = [a for a in others if a in receipts]
    survivors: dict[str, npt.NDArray[np.int64]] = {}
    dropped: dict[str, list[int]] = {}
    for party, k in spec.clients.items():
        alive = np.arange(k, dtype=np.int64)
        for receipt in receipts.values():
            rows = receipt.get(party)
            if _all_rows(rows, k):  # the common case, without the O(k log k) intersection
                continue
            alive = np.intersect1d(alive, rows if isinstance(rows, np.ndarray) else np.empty(0, np.int64))
        survivors[party] = alive
        if len(alive) < k:
            dropped[party] = np.setdiff1d(np.arange(k), alive).tolist()
    missing = sum(len(v) for v in dropped.values())
    if missing > spec.max_dropouts:
        who = ", ".join(f"{p}: {len(rows)}" for p, rows in dropped.items())
        _abort(comm, others, f"{missing} of {spec.total_clients} clients dropped out ({who}), more than the "
               f"{spec.max_dropouts} tolerated; the aggregate would cover too few clients. Fix: rerun the round, "
               "or raise max_dropouts if the privacy of smaller aggregates is acceptable")
    comm.broadcast(survivors, label="agg.survivors", to=others)
    count = spec.total_clients - missing
    ring = spec.fmt.ring
    own = _partial(local, survivors, spec) if local is not None else ring.zeros((spec.width,))
    if not spec.reveal:
        return AggregatorShare(share=own, count=count, survivors=survivors)
    parts: dict[str, RingArray] = {spec.server: own} if local is not None else {}
    for agg in others:
        try:
            got = comm.recv(agg, label="agg.partial")
        except (PartyUnavailableError, ProtocolAbortError):
            if spec.threshold is None:
                raise
            continue
        if spec.threshold is None:
            part = ring.check(got, f"partial sum from {agg}", received=True)
        elif isinstance(got, np.ndarray) and got.dtype == np.uint64 and not np.any(got >= np.uint64(_P61)):
            part = got
        else:
            raise MalformedMessageError(explain(f"partial sum from {agg}", type(got).__name__,
                                                "residues mod 2^61 - 1", f"check {agg}"))
        if ring.shape(part) != (spec.width,):
            raise MalformedMessageError(explain(f"partial sum from {agg}", ring.shape(part), f"({spec.width},)",
                                                f"check {agg}"))
        parts[agg] = part
    values = _combine(spec, parts)
    if spec.weighted:
        return AggregateResult(total=values[: spec.dim], count=count, dropped=dropped, weight_total=float(values[-1]))
    return AggregateResult(total=values, count=count, dropped=dropped)


def _all_rows(rows: Any, k: int) -> bool:
    """True when ``rows`` is exactly ``0, 1, ..., k-1`` (every client of the party reached that aggregator)."""
    return (isinstance(rows, np.ndarray) and rows.dtype == np.int64 and rows.shape == (k,)
            and (k == 0 or (int(rows[0]) == 0 and int(rows[-1]) == k - 1)) and bool(np.all(np.diff(rows) > 0)))


def _combine(spec: AggregationSpec, parts: Mapping[str, RingArray]) -> npt.NDArray[np.float64]:
    """The aggregate (reals) from the aggregators' partial sums: ring sum, or Lagrange interpolation at 0."""
    scheme = spec.scheme
    if scheme is None:
        ring = spec.fmt.ring
        total = ring.zeros((spec.width,))
        for part in parts.values():
            total = ring.add(total, part)
        return spec.fmt.decode(total)
    if len(parts) < scheme.t + 1:
        raise ProtocolAbortError(f"only {len(parts)} aggregators returned partial sums ({sorted(parts)}), fewer than "
                                 f"threshold + 1 = {scheme.t + 1}; the round cannot be completed")
    used = sorted(parts, key=spec.aggregators.index)[: scheme.t + 1]
    xs = tuple(spec.aggregators.index(a) + 1 for a in used)
    lambdas = scheme.lagrange_at_zero(xs)
    sums = [sum(int(v) * lam for v, lam in zip(column, lambdas, strict=True)) % _P61
            for column in zip(*(parts[a].tolist() for a in used), strict=True)]
    signed = np.array([v - _P61 if v > _P61 // 2 else v for v in sums], dtype=np.float64)
    return signed * 2.0 ** -spec.fmt.frac_bits


def _abort(comm: Comm, aggregators: Sequence[str], reason: str) -> Any:
    for agg in aggregators:
        try:
            comm.send(agg, {"abort": reason}, label="agg.survivors")
        except ProtocolAbortError:
            pass
    raise ProtocolAbortError(reason)


def _client_role(spec: AggregationSpec, values: Any, weights: Any,
                 lost: Mapping[str, Sequence[int]] | None) -> Any:
    return lambda comm: aggregation_client(comm, spec, values, weights, lost=lost)


# -- simulation ----------------------------------------------------------------------------------------------
def simulate_aggregation(
    spec: AggregationSpec,
    inputs: Mapping[str, Any],
    weights: Mapping[str, Any] | None = None,
    *,
    rng: RandomSource | None = None,
    lost: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
    absent: Sequence[str] = (),
    transport: Transport | None = None,
) -> ProtocolRun[Any]:
    """Run one aggregation with every party in a thread of this process (tests, simulations, benchmarks).

    ``inputs[party]`` (and ``weights[party]``) are each client party's rows; ``lost[party][aggregator]`` lists
    rows whose share never reaches that aggregator; parties in ``absent`` drop out before sending anything.
    The server's :class:`AggregateResult` is ``run.results[spec.server]``.
    """
    roles: dict[str, Any] = {spec.server: lambda c: aggregation_server(c, spec)}
    for agg in spec.aggregators:
        if agg != spec.server:
            roles[agg] = lambda c: aggregation_aggregator(c, spec)
    for party in spec.clients:
        if party in absent:
            roles[party] = lambda c: None
            continue
        w = None if weights is None else weights[party]
        party_lost = None if lost is None else lost.get(party)
        roles[party] = _client_role(spec, inputs[party], w, party_lost)
    return run_protocol(roles, rng=rng, transport=transport)
