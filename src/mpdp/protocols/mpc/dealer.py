"""The trusted dealer: a party that sends correlated randomness only, and its client-side provider.

Protocol
--------
1. Setup: the dealer sends each computing party ``i`` a fresh 32-byte key ``k_i`` (label
   ``mpc.dealer.seed``, drawn from the dealer's RandomSource); party ``i`` and the dealer both expand
   ``k_i`` into the stream ``S_i`` (AES-128-CTR, :class:`~mpdp.crypto.prg.AesCtrPrg`).
2. Per batch of correlations: every computing party sends the dealer the list of
   :class:`~mpdp.crypto.correlations.CorrelationSpec` it is about to use (label ``mpc.dealer.request``);
   the dealer checks the lists are identical (otherwise the parties run different programs and it aborts
   with :class:`~mpdp.errors.ProtocolAbortError`), expands every ``S_i`` for the whole request at once
   (:class:`~mpdp.crypto.correlations.CorrelationBatch`: the parts of
   :func:`~mpdp.crypto.correlations.draw`, spec by spec, in one keystream call) and sends party 0 only its corrections
   (:func:`~mpdp.crypto.correlations.deal`, label ``mpc.dealer.correlations``), in messages of 2, 4, 8, ...
   correlations (:func:`reply_chunks`: party 0 can start on the first while the dealer computes the rest, and
   a step's ~70 corrections travel in 6 messages instead of 70). A message is one flat uint64 array: the
   corrections in request order, each correlation's parts in the order of
   :data:`~mpdp.crypto.correlations.CORRECTED`; party 0 knows every shape from the request and refuses any
   other length (one array to decode instead of a dict of arrays per correlation). Parties 1..n-1 expand
   their own stream and need no reply. The masks ``r`` of masked products (``*_wrap`` kinds) come from a
   stream keyed by the dealer alone and are never shared: party 0's correction of ``c = a b + r``
   is uniform to it because the other parties' ``c`` shares are.
   A request of at least 8 correlations (a planned step, :mod:`~mpdp.protocols.mpc.planning`) is
   remembered by both sides under its number among such requests (up to 256, then the least recently requested
   gives its number to the new one: :class:`_Remembered`); sending the same list again
   sends that number instead (a DPVI step: one int instead of ~70 encoded specs, which the dealer would
   decode and validate again for every party). The corrections of a request by number travel in one
   message (:func:`reply_chunks` with ``whole``): a repeated plan is requested a block ahead
   (:meth:`~mpdp.protocols.mpc.planning.PlannedProvider.planned`'s ``ahead``), so party 0 does not wait for
   it, and each message costs both sides more than a chunk's pipelining gains.
3. Teardown: every party sends ``"close"``.

Security
--------
Semi-honest, and the dealer must not collude with any computing party: it knows every party's
correlation shares. It never receives a message of the online phase, so on its own it learns nothing
about the inputs; computing parties see only uniform shares and corrections (see
:mod:`mpdp.crypto.correlations`). Traffic from the dealer is one array per correlated value, to party 0.

References
----------
Beaver, "Efficient multiparty protocols using circuit randomization", CRYPTO 1991 (triples); the
seed-compressed dealer is the trusted-third-party mode of CrypTen (Knott et al., NeurIPS 2021).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mpdp.crypto.correlations import CorrelationBatch, CorrelationSpec, batch
from mpdp.crypto.correlations import spec as _spec
from mpdp.crypto.masked.plan import MaskedPlan
from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import Ring
from mpdp.errors import MalformedMessageError, ParameterError, ProtocolAbortError, explain
from mpdp.protocols.mpc.provider import (
    BeaverTriple,
    BitTriple,
    CompareMask,
    CorrelationProvider,
    DaBit,
    DcfKey,
    MaskedMaterial,
    MaskedProduct,
    OwnedProduct,
    SquarePair,
    WrapMask,
)
from mpdp.runtime import Comm, Party

__all__ = ["DealerProvider", "TrustedDealer"]

_SEED = "mpc.dealer.seed"
_REQUEST = "mpc.dealer.request"
_REPLY = "mpc.dealer.correlations"
_KEYS = "mpc.dealer.keys"
_EXHAUSTED = "exhausted"
_CLOSE = "close"
_REMEMBER_MIN = 8  # requests at least this long are remembered by number (both sides apply the same rule)
_REMEMBER_MAX = 256  # distinct requests remembered per session


class _Remembered:
    """The requests remembered by number: up to ``_REMEMBER_MAX`` of those with at least ``_REMEMBER_MIN``
    correlations; when full, a new one takes the number of the least recently requested.

    The dealer and every party keep one and update it the same way on every request (the parties' requests are
    identical, the dealer checks it), so a number means the same request on both sides. Replacing the least
    recently used matters over a long training: the public bounds drift and every minibatch size has its own
    plan, so a table that kept its first requests would hold stale plans while every later step's request
    travelled in full and was laid out again on both sides.
    """

    def __init__(self) -> None:
        self.slots: list[tuple[tuple[CorrelationSpec, ...], CorrelationBatch]] = []
        self.numbers: dict[tuple[CorrelationSpec, ...], int] = {}
        self.recency: OrderedDict[int, None] = OrderedDict()  # numbers, least recently requested first

    def find(self, key: tuple[CorrelationSpec, ...]) -> int | None:
        return self.numbers.get(key)

    def use(self, number: int) -> CorrelationBatch:
        self.recency.move_to_end(number)
        return self.slots[number][1]

    def add(self, key: tuple[CorrelationSpec, ...], work: CorrelationBatch) -> None:
        """Remember a request just sent in full (if long enough)."""
        if len(key) < _REMEMBER_MIN:
            return
        if len(self.slots) < _REMEMBER_MAX:
            number = len(self.slots)
            self.slots.append((key, work))
        else:
            number, _ = self.recency.popitem(last=False)
            del self.numbers[self.slots[number][0]]
            self.slots[number] = (key, work)
        self.numbers[key] = number
        self.recency[number] = None


def reply_chunks(count: int, *, whole: bool = False) -> list[slice]:
    """How the dealer splits the corrections of a request of ``count`` correlations into messages: 2, 4, 8, ...
    (the last one shorter), or one message when ``whole`` (a request by number). Both sides derive it from the
    request, so party 0 knows each message's length."""
    if whole:
        return [slice(0, count)] if count else []
    chunks, start, size = [], 0, 2
    while start < count:
        chunks.append(slice(start, min(start + size, count)))
        start += size
        size *= 2
    return chunks


def _stream(key: bytes, seeded: bool) -> AesCtrPrg:
    # A secret 32-byte key shared by the dealer and one party keys the PRG of their common stream.
    return AesCtrPrg(key, is_seeded=seeded)


def _computing_parties(comm: Comm, dealer: str, parties: Iterable[str] | None) -> tuple[str, ...]:
    names = tuple(p for p in comm.parties if p != dealer) if parties is None else tuple(parties)
    if dealer in names or not names or any(p not in comm.parties for p in names):
        raise ParameterError(
            explain("parties", names, f"computing parties among {comm.parties}, excluding the dealer {dealer!r}",
                    "pass the names of the parties that hold shares")
        )
    return names


class TrustedDealer(Party):
    """The dealer's role: serves correlations until every computing party closes.

    ``run`` returns ``{"batches", "correlations", "elements", "dcf_keys"}``: how much it dealt.

    Parameters
    ----------
    name:
        The dealer's party name (default ``"dealer"``).
    parties:
        The computing parties in canonical order; default every other party of the protocol.
    max_dcf_keys:
        How many DCF comparison keys (elements of ``dcf`` correlations) the dealer deals in all, or None for no
        limit. A request beyond it is answered with a notice to every party, which raises
        :class:`~mpdp.errors.ProtocolAbortError` before using any of the request's correlations (so before the
        opening of the comparison that needed the keys), and the dealer stops.
    """

    def __init__(self, name: str = "dealer", *, parties: Sequence[str] | None = None,
                 max_dcf_keys: int | None = None) -> None:
        super().__init__(name)
        self.parties = None if parties is None else tuple(parties)
        if max_dcf_keys is not None and (type(max_dcf_keys) is not int or max_dcf_keys < 0):
            raise ParameterError(explain("max_dcf_keys", max_dcf_keys, "None or an int >= 0",
                                         "pass the number of comparison keys the dealer may deal"))
        self.max_dcf_keys = max_dcf_keys

    def run(self, comm: Comm) -> dict[str, int]:
        parties = _computing_parties(comm, self.name, self.parties)
        streams = []
        for p in parties:
            key = comm.rng.bytes(32)
            comm.send(p, key, label=_SEED)
            streams.append(_stream(key, comm.rng.is_seeded))
        own = _stream(comm.rng.bytes(32), comm.rng.is_seeded)  # the masks of masked products: the dealer's only
        known = _Remembered()
        batches = correlations = elements = dcf_keys = 0
        while True:
            request = comm.recv(parties[0], label=_REQUEST)
            for p in parties[1:]:
                other = comm.recv(p, label=_REQUEST)
                if other != request:
                    raise ProtocolAbortError(
                        f"dealer: {p} asked for {other!r:.200} but {parties[0]} asked for {request!r:.200}; "
                        "the computing parties are running different programs"
                    )
            if request == _CLOSE:
                break
            whole = type(request) is int
            if whole and 0 <= request < len(known.slots):
                work = known.use(request)
            elif isinstance(request, list):
                specs = tuple(CorrelationSpec.from_wire(w) for w in request)
                if any(s.owner >= len(parties) for s in specs):
                    raise MalformedMessageError(explain("correlation owner", max(s.owner for s in specs),
                                                        f"a position among the {len(parties)} computing parties",
                                                        "reject the sender"))
                work = batch(specs)
                known.add(specs, work)
            else:
                raise MalformedMessageError(explain("dealer request", type(request).__name__,
                                                    f"a list of correlation specs, the number of one of the "
                                                    f"{len(known.slots)} remembered requests, or 'close'",
                                                    "reject the sender"))
            keys = sum(math.prod(s.shape) if s.plan is None else s.plan.dcf_keys for s in work.specs
                       if s.kind in ("dcf", "masked"))
            if keys and (len(parties) != 2 or (self.max_dcf_keys is not None
                                               and dcf_keys + keys > self.max_dcf_keys)):
                why = (f"{_EXHAUSTED}: {dcf_keys} of {self.max_dcf_keys} DCF keys dealt, {keys} more asked for"
                       if len(parties) == 2 else f"DCF keys need 2 computing parties, not {len(parties)}")
                for i, p in enumerate(parties):
                    comm.send(p, why, label=_REPLY if i == 0 else _KEYS)
                raise ProtocolAbortError(f"dealer: {why}")
            # Every stream is expanded for the whole request at once (one keystream call each), then the
            # corrections are computed chunk by chunk, each chunk sent as soon as it is ready.
            parts = [work.draw(s, index=i) for i, s in enumerate(streams)]
            masks = work.masks(own)
            sent = []
            for chunk in reply_chunks(len(work), whole=whole):
                sent.append(work.corrections(parts, masks, chunk.start, chunk.stop))
                comm.send(parties[0], sent[-1], label=_REPLY)
            if work.public_total:  # DCF keys' corrections: the other party needs them too
                public = work.public_words(np.concatenate(sent))
                for p in parties[1:]:
                    comm.send(p, public, label=_KEYS)
            batches += 1
            correlations += len(work)
            elements += work.elements
            dcf_keys += keys
        return {"batches": batches, "correlations": correlations, "elements": elements, "dcf_keys": dcf_keys}


def _refuse_notice(reply: Any) -> None:
    """A dealer's notice in place of a reply (out of DCF keys): a typed error before the correlations are used."""
    if type(reply) is str:
        raise ProtocolAbortError(explain("dealer reply", reply, "the correlations asked for",
                                         "give the dealer a larger max_dcf_keys, or compare without it "
                                         "(MPCSession(comparisons='circuit'))"))


class DealerProvider(CorrelationProvider):
    """A computing party's correlations, from a :class:`TrustedDealer`.

    Construction receives this party's stream key from the dealer (one message).

    Parameters
    ----------
    comm:
        This party's Comm.
    dealer:
        The dealer's party name.
    parties:
        The computing parties in canonical order (default: every party but the dealer).
    """

    def __init__(self, comm: Comm, *, dealer: str = "dealer", parties: Iterable[str] | None = None) -> None:
        self.comm = comm
        self.dealer = dealer
        self.parties = _computing_parties(comm, dealer, parties)
        if comm.name not in self.parties:
            raise ParameterError(explain("party", comm.name, f"one of {self.parties}", "run as a computing party"))
        self.index = self.parties.index(comm.name)
        key = comm.recv(dealer, label=_SEED)
        if not isinstance(key, bytes) or len(key) != 32:
            raise MalformedMessageError(explain("dealer key", type(key).__name__, "32 bytes", "check the dealer"))
        self._stream = _stream(key, comm.rng.is_seeded)
        self._issuer = hashlib.sha256(b"mpdp.dcf issuer:" + key).digest()[:8]
        self._ready: list[list[Any]] = []  # [spec, parts, correction still to receive]
        # party 0: per reply still to come, its entries, their batch and the index of the first in it
        self._replies: deque[tuple[list[list[Any]], CorrelationBatch, int]] = deque()
        # remembered requests (see the module docstring): their numbers and layouts
        self._known = _Remembered()
        self._closed = False

    # -- fetching -----------------------------------------------------------------------------------------
    def prefetch(self, specs: Sequence[CorrelationSpec]) -> None:
        if self._closed:
            raise ProtocolAbortError(f"{self.comm.name}: the dealer connection is closed")
        specs = list(specs)
        # Correlations already queued need not be fetched again (a protocol step announces its whole
        # batch, and the sub-steps it calls announce their part again). Usually they are the next ones
        # queued, in order (or a planned block's, followed by the next block's): each of those matches its
        # own queued entry.
        ready = self._ready
        common, end = 0, min(len(specs), len(ready))
        while common < end and (ready[common][0] is specs[common] or ready[common][0] == specs[common]):
            common += 1
        if common == len(specs):
            return
        if common == len(ready):  # every queued entry matched: the rest is missing
            specs = specs[common:]
        else:
            pending = [entry[0] for entry in ready]
            missing = []
            for spec in specs:
                if spec in pending:
                    pending.remove(spec)
                else:
                    missing.append(spec)
            specs = missing
            if not specs:
                return
        key = tuple(specs)
        known = self._known.find(key)
        if known is not None:
            work = self._known.use(known)
            self.comm.send(self.dealer, known, label=_REQUEST)
        else:
            work = batch(key)
            self._known.add(key, work)
            self.comm.send(self.dealer, [s.to_wire() for s in specs], label=_REQUEST)
        first = self.index == 0
        keys = work.public_total > 0  # the others receive the keys' corrections (none when all are empty)
        entries: list[list[Any]] = [[spec, part, first or (keys and bool(public))] for spec, part, public in
                   zip(specs, work.draw(self._stream, index=self.index), work.public_layout, strict=True)]
        if not first and not keys:
            for entry, public in zip(entries, work.public_layout, strict=True):
                part: dict[str, Any] = entry[1]
                for name, shape, _, _ in public:  # keys of no element: empty parts
                    part[name] = np.zeros(shape, dtype=np.uint64)
        self._ready += entries
        if first:  # party 0's corrections are received when first needed (they arrive in request order)
            self._replies.extend((entries[chunk], work, chunk.start)
                                 for chunk in reply_chunks(len(entries), whole=known is not None))
        elif work.public_total:  # the DCF keys' common corrections, in one message per request
            self._replies.append((entries, work, -1))

    def receive_prefetched(self) -> None:
        """Wait for the corrections of every correlation prefetched so far (party 0; a no-op elsewhere).

        Together with :meth:`prefetch` (e.g. of a :class:`~mpdp.protocols.mpc.planning.PlannedProvider`'s
        plan) this is an *offline phase*: afterwards the operations that consume those correlations run
        without waiting for the dealer.
        """
        while self._replies:  # every reply, including those of correlations dropped by retain
            self._receive_reply(self._replies.popleft())

    def retain(self, specs: Sequence[CorrelationSpec]) -> None:
        ready = self._ready
        if len(ready) == len(specs) and all(entry[0] is spec for entry, spec in zip(ready, specs, strict=True)):
            return  # the usual case: exactly the next block's plan is queued
        budget = Counter(specs)
        kept = []
        for entry in reversed(ready):  # the latest fetched copies are kept, the oldest dropped
            if budget[entry[0]] > 0:
                budget[entry[0]] -= 1
                kept.append(entry)
        if len(kept) < len(ready):
            # Their parts are simply never used. Party 0 still receives their corrections, in request order,
            # when a later entry's or receive_prefetched needs the replies behind them.
            ready[:] = kept[::-1]

    def _receive(self, entry: list[Any]) -> dict[str, Any]:
        while entry[2]:  # replies arrive in request order: take the earlier ones first
            self._receive_reply(self._replies.popleft())
        parts: dict[str, Any] = entry[1]
        return parts

    def _receive_reply(self, item: tuple[list[list[Any]], CorrelationBatch, int]) -> None:
        entries, work, start = item
        if start < 0:
            self._receive_public(entries, work)
            return
        reply = self.comm.recv(self.dealer, label=_REPLY)
        _refuse_notice(reply)
        offset = work.reply_offsets[start]
        total = work.reply_offsets[start + len(entries)] - offset
        if type(reply) is not np.ndarray or reply.dtype != np.uint64 or reply.shape != (total,):
            raise MalformedMessageError(explain("dealer reply", getattr(reply, "shape", type(reply).__name__),
                                                f"one uint64 array of the {total} correction words of "
                                                f"{len(entries)} correlations", "check the dealer"))
        for entry, layout in zip(entries, work.correction_layout[start : start + len(entries)], strict=True):
            part = entry[1]
            for name, shape, lo, hi in layout:  # views of the reply (disjoint: one correction each)
                view = reply[lo - offset : hi - offset]
                part[name] = view if len(shape) == 1 else view.reshape(shape)
            entry[2] = False

    def _receive_public(self, entries: list[list[Any]], work: CorrelationBatch) -> None:
        """The :data:`~mpdp.crypto.correlations.PUBLIC` parts of a request's correlations (parties 1..n-1)."""
        reply = self.comm.recv(self.dealer, label=_KEYS)
        _refuse_notice(reply)
        total = work.public_total
        if type(reply) is not np.ndarray or reply.dtype != np.uint64 or reply.shape != (total,):
            raise MalformedMessageError(explain("dealer keys", getattr(reply, "shape", type(reply).__name__),
                                                f"one uint64 array of {total} words", "check the dealer"))
        for entry, layout in zip(entries, work.public_layout, strict=True):
            part = entry[1]
            for name, shape, lo, hi in layout:
                part[name] = reply[lo:hi].reshape(shape)
            entry[2] = False

    def dcf_key(self, ring: Ring, shape: tuple[int, ...], depth: int) -> DcfKey:
        p = self.parts(_spec("dcf", ring.bits, shape, shift=depth))
        return DcfKey(p["r"], p["seed"], p["b"], p["cw"], p["last"], depth, self.index, self._issuer)

    @property
    def deals_dcf_keys(self) -> bool:
        return len(self.parties) == 2

    @property
    def deals_masked_plans(self) -> bool:
        return len(self.parties) == 2

    def masked_material(self, plan: MaskedPlan) -> MaskedMaterial:
        parts = self.parts(_spec("masked", 128, (), plan=plan))
        return MaskedMaterial(parts, plan.digest, self._issuer, self.index)

    @property
    def dcf_issuer(self) -> bytes:
        return self._issuer

    def parts(self, spec: CorrelationSpec) -> dict[str, Any]:
        """This party's parts of the correlation ``spec`` (name -> array; the typed methods wrap them)."""
        # Parts are drawn from the stream when fetched, in the same order on every party and at the dealer,
        # so a correlation may be consumed out of the prefetch order (e.g. when another TripleSource
        # interleaves its own requests); one not prefetched is fetched now.
        ready = self._ready
        for i, entry in enumerate(ready):
            if entry[0] is spec or entry[0] == spec:
                del ready[i]  # the entry leaves the queue: its parts dict goes to the caller
                return self._receive(entry) if entry[2] else entry[1]  # (received: its parts, without the call)
        self.prefetch([spec])
        return self._receive(ready.pop())

    # -- the provider interface ---------------------------------------------------------------------------
    def mul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        p = self.parts(_spec("mul", ring.bits, a_shape, b_shape))
        return BeaverTriple(p["a"], p["b"], p["c"])

    def matmul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        p = self.parts(_spec("matmul", ring.bits, a_shape, b_shape))
        return BeaverTriple(p["a"], p["b"], p["c"])

    def square_pair(self, ring: Ring, shape: tuple[int, ...]) -> SquarePair:
        p = self.parts(_spec("square", ring.bits, shape))
        return SquarePair(p["a"], p["c"])

    def wrap_mask(self, ring_in: Ring, ring_out: Ring, shape: tuple[int, ...], shift: int) -> WrapMask:
        p = self.parts(_spec("wrap", ring_in.bits, shape, out_ring_bits=ring_out.bits, shift=shift))
        return WrapMask(p["r"], p["msb"], p["low"])

    def compare_mask(self, ring: Ring, shape: tuple[int, ...]) -> CompareMask:
        p = self.parts(_spec("compare", ring.bits, shape))
        return CompareMask(p["r"], p["bits"])

    def and_triple(self, shape: tuple[int, ...]) -> BitTriple:
        p = self.parts(_spec("and", 64, shape))
        return BitTriple(p["a"], p["b"], p["c"])

    def dabit(self, ring: Ring, shape: tuple[int, ...]) -> DaBit:
        p = self.parts(_spec("dabit", ring.bits, shape))
        return DaBit(p["bit"], p["s"])

    def masked_product(self, kind: str, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                       shift: int, *, out_ring: Ring | None = None) -> MaskedProduct:
        square = kind == "square"
        p = self.parts(_spec(kind + "_wrap", ring.bits, a_shape, () if square else b_shape,
                            out_ring_bits=(out_ring or ring).bits, shift=shift))
        return MaskedProduct(p["a"], p["a"] if square else p["b"], p["c"], p["msb"], p["low"])

    @property
    def deals_owned_products(self) -> bool:
        return True

    def owned_product(self, kind: str, owner: int, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                      shift: int, *, out_ring: Ring | None = None) -> OwnedProduct:
        if not 0 <= owner < len(self.parties):
            raise ParameterError(explain("owner", owner, f"a position among the {len(self.parties)} computing parties",
                                         "pass the operand holder's index in the session's parties"))
        if kind not in ("mul", "matmul"):
            raise ParameterError(explain("kind", kind, "'mul' or 'matmul'", "name the product"))
        p = self.parts(_spec(kind + "_owned_wrap", ring.bits, a_shape, b_shape, out_ring_bits=(out_ring or ring).bits,
                             shift=shift, owner=owner))
        return OwnedProduct(p["a"] if owner == self.index else p["b"], p["c"], p["msb"], p["low"])

    def close(self) -> None:
        if not self._closed:
            if self._replies:  # corrections prefetched but never used: take them, so no reply is left unread
                self.receive_prefetched()
            self._closed = True
            self.comm.send(self.dealer, _CLOSE, label=_REQUEST)
