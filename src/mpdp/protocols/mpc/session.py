"""An MPC session: one computing party's context for secret-shared fixed-point computation.

A session binds a party's :class:`~mpdp.runtime.Comm`, the list of computing parties, a
:class:`~mpdp.protocols.mpc.provider.CorrelationProvider` and a default
:class:`~mpdp.crypto.fixed_point.FixedPointFormat`. Every computing party builds its own session and runs
the same program on it; the shared values it creates are
:class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint` objects holding *this party's* shares.

:class:`MPCSession` implements the :class:`~mpdp.protocols.mpc.tensor.Session` interface: the openings of
:class:`~mpdp.protocols.mpc.channel.Channel`, which the operations on shares use, and ``ops``, the operations
of :mod:`~mpdp.protocols.mpc.arithmetic`, :mod:`~mpdp.protocols.mpc.comparison` and
:mod:`~mpdp.protocols.mpc.functions` that the values' operators call. This module is the top of the package:
it imports those modules, and none of them imports it.

>>> from mpdp.protocols.mpc import MPCSession, TrustedDealer
>>> from mpdp.runtime import run_protocol
>>> def party(comm, x):
...     with MPCSession.with_dealer(comm) as s:
...         a = s.input("alice", x if comm.name == "alice" else None, bound=10.0)
...         b = s.input("bob", x if comm.name == "bob" else None, bound=10.0)
...         return float((a * b + 1.0).reveal())
>>> run = run_protocol({"alice": lambda c: party(c, 3.0), "bob": lambda c: party(c, -2.0),
...                     "dealer": TrustedDealer()})
>>> round(run.results["alice"], 4)
-5.0

Sharing identities
------------------
The session agrees on a random 8-byte session id when it starts (party 0 broadcasts it); every shared
value gets ``sharing_id = session id || counter``. Because all parties create values in the same order,
the ids agree, and every opening message carries the id of the value being opened: a party that receives
a share of a different sharing raises :class:`~mpdp.errors.KeyMismatchError` instead of adding unrelated
shares. Operands from different sessions are refused the same way.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.fixed_point import FAST, FixedPointFormat
from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import Ring, RingArray, ring_for_bits
from mpdp.errors import DomainError, KeyMismatchError, MalformedMessageError, ParameterError, explain
from mpdp.protocols.mpc import arithmetic, comparison, functions
from mpdp.protocols.mpc.channel import check_bound
from mpdp.protocols.mpc.dealer import DealerProvider
from mpdp.protocols.mpc.masked import functions as masked
from mpdp.protocols.mpc.provider import CorrelationProvider
from mpdp.protocols.mpc.tensor import Operations, SharedFixedPoint
from mpdp.runtime import Comm

__all__ = ["MPCSession"]

_OPENING_KEYS = frozenset({"id", "v"})
_UINT64, _UINT8 = np.dtype(np.uint64), np.dtype(np.uint8)  # compared with a dtype, not a type: no conversion
_ID = struct.Struct("<8sQ")
_Z64 = ring_for_bits(64)


def _masked(x: SharedFixedPoint) -> bool:
    """Whether ``x``'s session computes functions on masked wires and they take ``x``."""
    return x.session.functions == "masked" and masked.applies(x)


def _exp(x: SharedFixedPoint, params: Any = None) -> SharedFixedPoint:
    return masked.exp(x, params) if _masked(x) else functions.exp(x, params)


def _sigmoid(x: SharedFixedPoint, params: Any = None) -> SharedFixedPoint:
    return masked.sigmoid(x, params) if _masked(x) else functions.sigmoid(x, params)


def _reciprocal(x: SharedFixedPoint, params: Any = None) -> SharedFixedPoint:
    return masked.reciprocal(x, params) if _masked(x) else functions.reciprocal(x, params)


def _div(a: SharedFixedPoint, b: SharedFixedPoint) -> SharedFixedPoint:
    return masked.div(a, b) if _masked(b) else functions.div(a, b)


def _sqrt(x: SharedFixedPoint, params: Any = None) -> SharedFixedPoint:
    return masked.sqrt(x, params) if _masked(x) else functions.sqrt(x, params)


def _inv_sqrt(x: SharedFixedPoint, params: Any = None) -> SharedFixedPoint:
    return masked.inv_sqrt(x, params) if _masked(x) else functions.inv_sqrt(x, params)


class _Operations:
    """The engine's interactive operations, as :class:`~mpdp.protocols.mpc.tensor.SharedFixedPoint`'s operators
    call them (:class:`~mpdp.protocols.mpc.tensor.Operations`)."""

    mul = staticmethod(arithmetic.mul)
    mul_public = staticmethod(arithmetic.mul_public)
    square = staticmethod(arithmetic.square)
    mul_split = staticmethod(arithmetic.mul_split)
    matmul = staticmethod(arithmetic.matmul)
    matmul_public = staticmethod(arithmetic.matmul_public)
    truncate = staticmethod(arithmetic.truncate)
    convert = staticmethod(arithmetic.convert)
    less = staticmethod(comparison.less)
    greater = staticmethod(comparison.greater)
    max_along = staticmethod(comparison.max_along)
    div = staticmethod(_div)
    reciprocal = staticmethod(_reciprocal)
    exp = staticmethod(_exp)
    sigmoid = staticmethod(_sigmoid)
    sqrt = staticmethod(_sqrt)
    inv_sqrt = staticmethod(_inv_sqrt)


class MPCSession:
    """One computing party's side of a secret-sharing computation.

    Parameters
    ----------
    comm:
        This party's Comm.
    provider:
        Source of correlated randomness (e.g. :class:`~mpdp.protocols.mpc.dealer.DealerProvider`).
    parties:
        The computing parties in canonical order (default: every party of ``comm``). Party 0 of this
        order is the *leader*: it adds public constants to its shares.
    fmt:
        Default fixed-point format of new shared values.
    comparisons:
        ``"circuit"`` (default): comparisons by the carry circuit (7 rounds in Z_2^64); ``"fss"``: one round
        with DCF keys from the provider (:mod:`~mpdp.protocols.mpc.fss_compare`; a dealer with two computing
        parties deals them), falling back to the circuit where it does not.
    functions:
        How ``exp``, ``sigmoid``, ``reciprocal``, division and the square roots of Z_2^128 values are computed:
        ``"circuit"`` (default): the iterative functions of :mod:`~mpdp.protocols.mpc.functions` (products and
        comparisons, 16 to 42 rounds, any provider and number of parties); ``"masked"``: on masked wires
        (:mod:`~mpdp.protocols.mpc.masked.functions`: 2 to 4 rounds, a dealer's tables and keys, two computing
        parties), falling back to the circuit functions where the provider deals no masked plans.
    """

    ops: Operations = _Operations()
    """The operations behind the operators of this session's shared values (the same for every session)."""

    def __init__(self, comm: Comm, *, provider: CorrelationProvider, parties: Iterable[str] | None = None,
                 fmt: FixedPointFormat = FAST, comparisons: str = "circuit", functions: str = "circuit") -> None:
        self.comm = comm
        if comparisons not in ("circuit", "fss"):
            raise ParameterError(explain("comparisons", comparisons, "'circuit' or 'fss'",
                                         "pick how the session compares"))
        if functions not in ("circuit", "masked"):
            raise ParameterError(explain("functions", functions, "'circuit' or 'masked'",
                                         "pick how the session computes exp, reciprocals and roots"))
        self.comparisons = comparisons
        self.functions = functions
        self.parties = tuple(comm.parties if parties is None else parties)
        if comm.name not in self.parties or any(p not in comm.parties for p in self.parties) \
                or len(set(self.parties)) != len(self.parties):
            raise ParameterError(explain("parties", self.parties, f"distinct parties of {comm.parties} including "
                                         f"{comm.name!r}", "list the computing parties"))
        if not isinstance(fmt, FixedPointFormat):
            raise ParameterError(explain("fmt", fmt, "a FixedPointFormat", "pass e.g. FixedPointFormat(64, 20)"))
        self.provider = provider
        self.fmt = fmt
        self.index = self.parties.index(comm.name)
        self.leader = self.index == 0
        self.peers = tuple(p for p in self.parties if p != comm.name)
        self._pair_keys: dict[str, bytes] | None = None
        self._pair_streams: dict[tuple[str, str], AesCtrPrg] = {}  # (owner, other) -> keystream, input_seeded
        if self.leader:
            session_id = comm.rng.bytes(8)
            comm.broadcast(session_id, label="mpc.session", to=self.peers)
        else:
            session_id = comm.recv(self.parties[0], label="mpc.session")
            if not isinstance(session_id, bytes) or len(session_id) != 8:
                raise MalformedMessageError(explain("session id", session_id, "8 bytes", "check the leader"))
        self.session_id: bytes = session_id
        # new_id(): session id || counter (8 bytes, little-endian) for counter = 1, 2, ..., a C-level callable
        self.new_id: Callable[[], bytes] = map(_ID.pack, itertools.repeat(session_id), itertools.count(1)).__next__
        """The next sharing id (identical on every party running the same program)."""

    @classmethod
    def with_dealer(cls, comm: Comm, *, dealer: str = "dealer", parties: Iterable[str] | None = None,
                    fmt: FixedPointFormat = FAST, comparisons: str = "circuit",
                    functions: str = "circuit") -> MPCSession:
        """A session whose correlations come from the :class:`~mpdp.protocols.mpc.dealer.TrustedDealer`
        named ``dealer`` (every other party computes, unless ``parties`` says otherwise)."""
        provider = DealerProvider(comm, dealer=dealer, parties=parties)
        return cls(comm, provider=provider, parties=provider.parties, fmt=fmt, comparisons=comparisons,
                   functions=functions)

    def close(self) -> None:
        """Tell the provider no more correlations are needed (the dealer stops)."""
        self.provider.close()

    def __enter__(self) -> MPCSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MPCSession({self.comm.name!r} of {self.parties}, fmt={self.fmt})"

    @property
    def n(self) -> int:
        return len(self.parties)

    # -- opening ------------------------------------------------------------------------------------------
    def _exchange(self, values: list[Any], sharing_id: bytes, label: str) -> list[tuple[str, list[Any]]]:
        """Send this party's ``values`` of ``sharing_id`` to every peer and receive theirs (one round): each peer's
        ``len(values)`` values, its message checked as an opening of ``sharing_id``."""
        comm = self.comm
        for p in self.peers:
            comm.send_opening(p, sharing_id, values, label=label)
        count = len(values)
        replies = []
        for p in self.peers:
            got, body = comm.recv_opening(p, sharing_id, count, label=label)
            replies.append((p, self._check_reply(p, body, sharing_id, count) if got is None else got))
        return replies

    def _check_reply(self, src: str, msg: Any, sharing_id: bytes, count: int) -> list[Any]:
        if type(msg) is not dict or msg.keys() != _OPENING_KEYS or type(msg["v"]) is not list \
                or len(msg["v"]) != count:
            raise MalformedMessageError(explain(f"opening from {src}", type(msg).__name__,
                                                f"{{'id', 'v': {count} arrays}}", "run the same mpdp version"))
        if msg["id"] != sharing_id:
            got = msg["id"].hex() if isinstance(msg["id"], bytes) else msg["id"]
            raise KeyMismatchError(
                explain(f"sharing id from {src}", got, f"{sharing_id.hex()} (the value {self.comm.name} opens)",
                        "the parties are opening shares of different sharings: run the same program on all")
            )
        return list(msg["v"])

    def open(self, ring: Ring, shares: Sequence[RingArray], *, sharing_id: bytes, label: str) -> list[RingArray]:
        """Open additive shares to every computing party (one round): the ring sums."""
        shares = [np.asarray(s, dtype=_UINT64) for s in shares]
        peers = self.peers
        if not peers:
            return [s.copy() for s in shares]
        z64 = ring is _Z64  # Z_2^64: numpy's wrapping uint64 addition, into the received array (this party's own)
        # each sum is a new array (the received one, or ring.add's): the caller's shares are never modified (nor
        # aliased)
        totals = shares
        for src, values in self._exchange(shares, sharing_id, label):
            for i, v in enumerate(values):
                mine = totals[i]
                if z64 and type(v) is np.ndarray and v.dtype == _UINT64 and v.shape == mine.shape:
                    totals[i] = np.add(mine, v, out=v)  # = ring.check(v) and ring.add(mine, v)
                    continue
                what = f"share from {src}"
                v = ring.check(v, what, received=True)
                if v.shape != mine.shape:
                    raise _shape_error(v, mine, what)
                totals[i] = ring.add(mine, v)
        return totals

    def exchange(self, ring: Ring, outgoing: Mapping[str, Sequence[RingArray]],
                 shapes: Mapping[str, Sequence[tuple[int, ...]]], *, sharing_id: bytes,
                 label: str) -> dict[str, list[RingArray]]:
        """Send each peer in ``outgoing`` its own arrays, ``outgoing[peer]`` (elements of ``ring``), and receive
        from each peer in ``shapes`` the arrays it sent this party, of the public ``shapes[peer]`` (one round;
        :meth:`open` when every peer is sent the same arrays and they are summed). Every party must name the
        same pairs (a peer this party sends to expects it among its own ``shapes``). Refuses a peer's array of
        another shape or outside ``ring``."""
        comm = self.comm
        if not set(outgoing) <= set(self.peers) or not set(shapes) <= set(self.peers):
            raise ParameterError(explain("peers", sorted({*outgoing, *shapes}), f"peers among {self.peers}",
                                         "exchange with the session's other computing parties"))
        for p in self.peers:
            if p in outgoing:
                comm.send_opening(p, sharing_id, [np.asarray(v, dtype=_UINT64) for v in outgoing[p]], label=label)
        received = {}
        for p in self.peers:
            if p not in shapes:
                continue
            count = len(shapes[p])
            got, body = comm.recv_opening(p, sharing_id, count, label=label)
            values = self._check_reply(p, body, sharing_id, count) if got is None else got
            checked = []
            for v, shape in zip(values, shapes[p], strict=True):
                v = ring.check(v, f"array from {p}", received=True)
                if ring.shape(v) != tuple(shape):
                    raise MalformedMessageError(explain(f"array from {p}", ring.shape(v), f"shape {tuple(shape)}",
                                                        "the parties run different programs: check the peer"))
                checked.append(v)
            received[p] = checked
        return received

    def open_to(self, ring: Ring, shares: Sequence[RingArray], receiver: str, *, sharing_id: bytes,
                label: str) -> list[RingArray] | None:
        """Open to ``receiver`` only; returns the sums there and None elsewhere."""
        shares = [np.asarray(s, dtype=np.uint64) for s in shares]
        if receiver not in self.parties:
            raise ParameterError(explain("receiver", receiver, f"one of {self.parties}", "name a computing party"))
        if self.comm.name != receiver:
            self.comm.send_opening(receiver, sharing_id, shares, label=label)
            return None
        totals = list(shares) if self.peers else [s.copy() for s in shares]
        for src in self.peers:
            got, body = self.comm.recv_opening(src, sharing_id, len(shares), label=label)
            values = self._check_reply(src, body, sharing_id, len(shares)) if got is None else got
            what = f"share from {src}"
            for i, v in enumerate(values):
                mine = totals[i]
                v = ring.check(v, what, received=True)
                if v.shape != mine.shape:
                    raise _shape_error(v, mine, what)
                totals[i] = ring.add(mine, v)
        return totals

    def open_xor(self, words: Sequence[RingArray], *, sharing_id: bytes, label: str) -> list[RingArray]:
        """Open XOR-shared uint64 words to every computing party."""
        words = [np.asarray(w, dtype=np.uint64) for w in words]
        replies = self._exchange(words, sharing_id, label)
        # the sums accumulate in the first peer's decoded arrays (this party's own memory), ours left unchanged
        totals = list(words) if self.peers else [np.array(w, copy=True) for w in words]
        for src, values in replies:
            for i, v in enumerate(values):
                if type(v) is not np.ndarray or v.dtype != _UINT64 or v.shape != words[i].shape:
                    raise MalformedMessageError(explain(f"bit shares from {src}", getattr(v, "shape", v),
                                                        f"uint64 words of shape {words[i].shape}", "check the peer"))
                totals[i] = np.bitwise_xor(v, totals[i], out=v)
        return totals

    def open_with_words(self, ring: Ring, shares: Sequence[RingArray], words: Sequence[RingArray], *,
                        sharing_id: bytes, label: str) -> tuple[list[RingArray], list[RingArray]]:
        """:meth:`open` of ``shares`` and :meth:`open_xor` of ``words`` in one message (one round): a comparison
        opens its masked input together with the first AND gates of its mask bits, which need no input."""
        shares = [np.asarray(s, dtype=np.uint64) for s in shares]
        words = [np.asarray(w, dtype=np.uint64) for w in words]
        count = len(shares)
        replies = self._exchange(shares + words, sharing_id, label)
        totals = list(shares) if self.peers else [s.copy() for s in shares]
        xors = list(words) if self.peers else [np.array(w, copy=True) for w in words]  # as in open_xor
        for src, values in replies:
            what = f"share from {src}"
            for i in range(count):
                mine = totals[i]
                v = ring.check(values[i], what, received=True)
                if v.shape != mine.shape:
                    raise _shape_error(v, mine, what)
                totals[i] = ring.add(mine, v)
            for i, v in enumerate(values[count:]):
                if type(v) is not np.ndarray or v.dtype != _UINT64 or v.shape != words[i].shape:
                    raise MalformedMessageError(explain(f"bit shares from {src}", getattr(v, "shape", v),
                                                        f"uint64 words of shape {words[i].shape}", "check the peer"))
                xors[i] = np.bitwise_xor(v, xors[i], out=v)
        return totals, xors

    def open_bits(self, bits: npt.NDArray[Any], *, sharing_id: bytes, label: str) -> npt.NDArray[np.uint8]:
        """Open XOR-shared single bits (0/1 of any integer dtype) packed eight to a byte; returns uint8 0/1."""
        bits = np.asarray(bits)
        shape = bits.shape
        flat = bits.reshape(-1)
        packed = np.packbits(flat if flat.dtype == np.uint8 else flat.astype(np.uint8) & np.uint8(1))
        replies = self._exchange([packed], sharing_id, label)
        total = packed  # the sum accumulates in the peers' decoded arrays, as in open_xor
        for src, (v,) in replies:
            if type(v) is not np.ndarray or v.dtype != _UINT8 or v.shape != packed.shape:
                raise MalformedMessageError(explain(f"bits from {src}", getattr(v, "shape", v),
                                                    f"{packed.shape} packed bytes", "check the peer"))
            total = np.bitwise_xor(v, total, out=v)
        count = math.prod(shape)
        return np.unpackbits(total, count=count).reshape(shape)

    # -- creating shared values ---------------------------------------------------------------------------
    def input(self, owner: str, values: Any = None, *, bound: float | None = None,
              fmt: FixedPointFormat | None = None, sharing_id: bytes | None = None) -> SharedFixedPoint:
        """Secret-share ``owner``'s private ``values`` (pass None on the other parties). One message from the
        owner to each other party.

        ``bound`` is a *public* upper bound on ``max |values|`` that every party passes (or None on the
        others to accept the owner's): it sets the capacity checks of later operations. The owner refuses
        values beyond it (:class:`~mpdp.errors.DomainError`). Default: the format's ``max_value``, which
        is sound but makes products refuse to run; declare the real bound. ``sharing_id``: one allocated
        beforehand with :meth:`new_id` (every party in the same order), so that several owners may send their
        inputs first and receive the others' after, all in one round.
        """
        fmt = fmt or self.fmt
        ring = fmt.ring
        if owner not in self.parties:
            raise ParameterError(explain("owner", owner, f"one of {self.parties}", "name a computing party"))
        sharing_id = self.new_id() if sharing_id is None else sharing_id
        label = "mpc.input"
        if self.comm.name == owner:
            declared = fmt.max_value if bound is None else check_bound(bound, fmt)
            mine, shape = _encode_input(owner, values, declared, fmt)
            for p in self.peers:
                r = ring.random(self.comm.rng, shape)
                mine = ring.sub(mine, r)
                self.comm.send(p, {"id": sharing_id, "v": [r], "bound": declared}, label=label)
            return SharedFixedPoint(self, mine, fmt=fmt, scale=fmt.frac_bits, bound=declared, sharing_id=sharing_id)
        if values is not None:
            raise ParameterError(explain("values", "data on a non-owner", "None",
                                         f"only {owner} passes values to input(); the others pass None"))
        msg = self.comm.recv(owner, label=label)
        if not isinstance(msg, dict) or set(msg) != {"id", "v", "bound"}:
            raise MalformedMessageError(explain(f"input from {owner}", type(msg).__name__, "an input message",
                                                "run the same mpdp version"))
        (share,) = self._check_reply(owner, {"id": msg["id"], "v": msg["v"]}, sharing_id, 1)
        declared = msg["bound"]
        if not isinstance(declared, float) or (bound is not None and declared != check_bound(bound, fmt)):
            raise ParameterError(explain(f"bound declared by {owner}", declared, f"the bound passed here ({bound})",
                                         "pass the same public bound on every party, or None to accept the owner's"))
        check_bound(declared, fmt)
        return SharedFixedPoint(self, ring.check(share, f"share from {owner}", received=True), fmt=fmt,
                                scale=fmt.frac_bits, bound=declared, sharing_id=sharing_id)

    def input_seeded(self, owner: str, values: Any = None, *, shape: tuple[int, ...], bound: float,
                     fmt: FixedPointFormat | None = None, sharing_id: bytes | None = None) -> SharedFixedPoint:
        """:meth:`input` without a message, for values whose ``shape`` and ``bound`` are public (every party
        passes the same ones; the owner's values must have that shape and stay within the bound).

        Each other party ``p``'s share is the next ``prod(shape)`` elements of the keystream of the ordered pair
        ``(owner, p)``: AES-CTR (:class:`~mpdp.crypto.prg.AesCtrPrg`) under the secret key the pair agreed on
        (:meth:`pair_key`) and the owner's name, one stream per ordered pair per session, consumed in the order
        of the owner's sharings (every party makes the same calls for each owner in the same order, as for
        every sharing; the owners may interleave differently at different parties). The owner keeps
        ``x - sum_p r_p``. ``p`` holds a uniformly
        random share, as if the owner had drawn it and sent it (the standard seeded input of additive
        sharing): each element of the stream serves one sharing only, so security is :meth:`input`'s under
        the PRG assumption; the owner's round and message go, and so does a cipher set-up per sharing (one
        per pair instead). Nothing is received, so nothing is checked here: parties that disagree on the order
        of sharings draw unrelated shares, and the next opening that mixes them fails its sharing-id check
        (:class:`~mpdp.errors.KeyMismatchError`).
        """
        fmt = fmt or self.fmt
        ring = fmt.ring
        if owner not in self.parties:
            raise ParameterError(explain("owner", owner, f"one of {self.parties}", "name a computing party"))
        shape = _check_shape(shape)
        declared = check_bound(bound, fmt)
        sharing_id = self.new_id() if sharing_id is None else sharing_id
        if self.comm.name == owner:
            mine, _ = _encode_input(owner, values, declared, fmt, shape=shape)
            for p in self.peers:
                mine = ring.sub(mine, ring.random(self._pair_stream(owner, p), shape))
        elif values is not None:
            raise ParameterError(explain("values", "data on a non-owner", "None",
                                         f"only {owner} passes values to input_seeded(); the others pass None"))
        else:
            mine = ring.random(self._pair_stream(owner, self.comm.name), shape)
        return SharedFixedPoint(self, mine, fmt=fmt, scale=fmt.frac_bits, bound=declared, sharing_id=sharing_id)

    def _pair_stream(self, owner: str, other: str) -> AesCtrPrg:
        """The keystream of ``other``'s shares of ``owner``'s seeded inputs (this party is one of the two), keyed
        once by their pair key and the owner's name (a fixed-length key last: the encoding is unambiguous)."""
        stream = self._pair_streams.get((owner, other))
        if stream is None:
            key = self.pair_key(other if owner == self.comm.name else owner)
            stream = AesCtrPrg(b"mpc.input_seeded:" + owner.encode("utf-8") + b"\x00" + key)
            self._pair_streams[(owner, other)] = stream
        return stream

    def pair_key(self, peer: str) -> bytes:
        """The secret 32-byte key this party shares with computing party ``peer``, for :meth:`input_seeded`.

        Agreed on first use, by every computing party at the same point of the program: each party draws one
        key per later party in the canonical order and sends it over their private channel (one message per
        pair per session), then receives the earlier parties' keys.
        """
        if self._pair_keys is None:
            keys: dict[str, bytes] = {}
            later = self.parties[self.index + 1:]
            for p in later:
                keys[p] = self.comm.rng.bytes(32)
                self.comm.send(p, keys[p], label="mpc.pair_key")
            for p in self.parties[: self.index]:
                key = self.comm.recv(p, label="mpc.pair_key")
                if not isinstance(key, bytes) or len(key) != 32:
                    raise MalformedMessageError(explain(f"pair key from {p}", type(key).__name__, "32 bytes",
                                                        "run the same mpdp version on every party"))
                keys[p] = key
            self._pair_keys = keys
        key = self._pair_keys.get(peer)
        if key is None:
            raise ParameterError(explain("peer", peer, f"another computing party of {self.parties}",
                                         "name a computing party other than this one"))
        return key

    def public(self, values: Any, *, fmt: FixedPointFormat | None = None) -> SharedFixedPoint:
        """A public value as a (trivially) shared one: the leader holds the encoding, the others zero."""
        fmt = fmt or self.fmt
        x = np.asarray(values, dtype=np.float64)
        encoded = fmt.encode(x, name="public value")
        share = encoded if self.leader else fmt.ring.zeros(tuple(x.shape))
        bound = float(np.max(np.abs(x))) if x.size else 0.0
        return SharedFixedPoint(self, share, fmt=fmt, scale=fmt.frac_bits, bound=bound, sharing_id=self.new_id())

    def from_shares(self, share: RingArray, *, bound: float, fmt: FixedPointFormat | None = None,
                    scale: int | None = None) -> SharedFixedPoint:
        """Wrap this party's additive shares (e.g. produced by another protocol) as a shared value.

        Every party must call it in the same order with the same public ``bound`` and ``scale``.
        """
        fmt = fmt or self.fmt
        check_bound(bound, fmt)
        return SharedFixedPoint(self, fmt.ring.check(share, "share"), fmt=fmt,
                                scale=fmt.frac_bits if scale is None else scale, bound=float(bound),
                                sharing_id=self.new_id())


def _shape_error(share: RingArray, mine: RingArray, what: str) -> MalformedMessageError:
    """A peer's share of the value this party opens must have this party's shape (numpy would broadcast another)."""
    return MalformedMessageError(explain(what, share.shape, f"shape {mine.shape}, as this party's share",
                                         "the parties are opening differently shaped values: check the peer"))


def _encode_input(owner: str, values: Any, declared: float, fmt: FixedPointFormat,
                  shape: tuple[int, ...] | None = None) -> tuple[RingArray, tuple[int, ...]]:
    """The owner's values encoded in ``fmt`` and their shape; refused when missing, of another ``shape`` or beyond
    ``declared``."""
    if values is None:
        raise ParameterError(explain("values", None, f"{owner}'s data", "the owner passes its values"))
    x = np.asarray(values, dtype=np.float64)
    if shape is not None and x.shape != shape:
        raise ParameterError(explain(f"{owner}'s input", x.shape, f"the public shape {shape}",
                                     "pass values of the shape every party declares"))
    encoded = fmt.encode(x, name=f"{owner}'s input")
    worst = float(np.max(np.abs(x))) if x.size else 0.0
    if worst > declared:
        raise DomainError(explain(f"{owner}'s input", f"max |x| = {worst:.6g}", f"|x| <= bound = {declared:g}",
                                  "clip the data to the bound, or declare a larger bound"))
    return encoded, tuple(x.shape)


def _check_shape(shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                               for d in shape):
        raise ParameterError(explain("shape", shape, "a tuple of non-negative ints", "pass e.g. shape=(100, 10)"))
    return shape
