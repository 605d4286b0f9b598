"""Where a computing party gets its shares of correlated randomness: the pluggable provider interface.

The online protocols of :mod:`mpdp.protocols.mpc` never generate correlations themselves; each party asks
its :class:`CorrelationProvider` for *its own shares* of what the next step needs. Providers are objects
of one party, bound to that party's :class:`~mpdp.runtime.Comm` when built, and every computing party's
provider must be asked for the same sequence of correlations (the protocols guarantee this by running the
same program on every party).

Two levels
----------
:class:`TripleSource`
    The multiplication triples only: :meth:`~TripleSource.mul_triple` (elementwise, numpy broadcasting)
    and :meth:`~TripleSource.matmul_triple`. This is the part a homomorphic-encryption backend replaces,
    generating the triples between the computing parties without a dealer
    (Paillier: :mod:`~mpdp.protocols.mpc.he_triples`).
:class:`CorrelationProvider`
    A ``TripleSource`` that also supplies square pairs, wrap masks (truncation and ring conversion),
    comparison masks, bitwise AND triples and daBits. The trusted dealer
    (:class:`~mpdp.protocols.mpc.dealer.DealerProvider`) implements all of them, and also *owned products*
    (:meth:`~CorrelationProvider.owned_product`: a product whose left operand one party holds in the clear,
    :func:`~mpdp.protocols.mpc.arithmetic.matmul_owned` and ``mul_owned``), which cannot be composed from the others:
    :attr:`~CorrelationProvider.deals_owned_products` says whether a provider deals them, and the protocol
    falls back to a product of shared operands where it does not.

To plug in a new triple source, subclass :class:`TripleSource`, implement the two methods so that they
return this party's additive shares ``(a, b, c)`` in ``ring`` (arrays as described in
:mod:`mpdp.crypto.ring`; ``c = a * b`` resp. ``c = a @ b`` summed over all computing parties) and combine
it with a provider for the rest::

    provider = WithTriplesFrom(PaillierTriples(comm, ...), rest=DealerProvider(comm, dealer="dealer"))
    session = MPCSession(comm, provider=provider, parties=("alice", "bob"))

Contract for every method: returns this party's shares only; the shares of all computing parties satisfy
the relation documented on the method; the returned arrays are fresh (never reused); the call may
communicate, but only through the party's own ``Comm`` and deterministically in the sequence of calls.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from mpdp.crypto.correlations import CorrelationSpec, draw_shape
from mpdp.crypto.masked.plan import MaskedPlan
from mpdp.crypto.ring import Ring, RingArray
from mpdp.errors import ParameterError, explain

__all__ = [
    "BeaverTriple",
    "BitTriple",
    "CompareMask",
    "CorrelationProvider",
    "DaBit",
    "DcfKey",
    "MaskedMaterial",
    "MaskedProduct",
    "OwnedProduct",
    "SquarePair",
    "TripleSource",
    "WithTriplesFrom",
    "WrapMask",
]


@dataclass(frozen=True)
class BeaverTriple:
    """This party's shares of ``a``, ``b`` and ``c = a * b`` (or ``a @ b``) in one ring."""

    a: RingArray = field(repr=False)
    b: RingArray = field(repr=False)
    c: RingArray = field(repr=False)


@dataclass(frozen=True)
class SquarePair:
    """Shares of ``a`` and ``c = a * a``."""

    a: RingArray = field(repr=False)
    c: RingArray = field(repr=False)


@dataclass(frozen=True)
class WrapMask:
    """Shares of a uniform ``r`` in the input ring, and in the output ring of its top bit ``msb`` and of
    ``low = (r mod 2^(l-1)) >> shift``."""

    r: RingArray = field(repr=False)
    msb: RingArray = field(repr=False)
    low: RingArray = field(repr=False)


@dataclass(frozen=True)
class MaskedProduct:
    """A product correlation that lands masked for its truncation: shares of ``a``, ``b`` (``a`` again for a
    square), ``c = a * b + r`` (``a @ b + r``, ``a * a + r``) for a uniform ``r`` of the product's shape, and,
    in the output ring (the same ring unless the truncation also narrows it), of ``r``'s top bit ``msb`` and of
    ``low = (r mod 2^(l-1)) >> shift`` (as :class:`WrapMask`, without shares of ``r`` itself, which the
    protocol never needs)."""

    a: RingArray = field(repr=False)
    b: RingArray = field(repr=False)
    c: RingArray = field(repr=False)
    msb: RingArray = field(repr=False)
    low: RingArray = field(repr=False)


@dataclass(frozen=True)
class OwnedProduct:
    """A :class:`MaskedProduct` of ``X @ y`` (or ``X * y``) whose left operand ``X`` one computing party, the
    owner, holds in the clear (spec kinds ``matmul_owned_wrap``, ``mul_owned_wrap``). The owner's ``mask`` is
    the whole mask ``A`` of ``X``; every other party's ``mask`` is its share of the mask ``B`` of ``y`` (the
    owner's share of ``B`` is zero); ``c = A @ B + r``, ``msb`` and ``low`` are shared by all, as in
    :class:`MaskedProduct`."""

    mask: RingArray = field(repr=False)
    c: RingArray = field(repr=False)
    msb: RingArray = field(repr=False)
    low: RingArray = field(repr=False)


@dataclass(frozen=True)
class CompareMask:
    """Additive shares of a uniform ``r`` and XOR shares of its bits, packed as ``(ring.words, *shape)``
    uint64 words (bit ``j`` of ``r`` is bit ``j mod 64`` of word ``j // 64``)."""

    r: RingArray = field(repr=False)
    bits: RingArray = field(repr=False)


@dataclass(frozen=True)
class BitTriple:
    """XOR shares of 64-bit words ``a``, ``b`` and ``c = a & b``."""

    a: RingArray = field(repr=False)
    b: RingArray = field(repr=False)
    c: RingArray = field(repr=False)


@dataclass(frozen=True)
class DaBit:
    """One random bit per element, XOR-shared (``bit``, uint8 0/1) and additively shared in the ring (``s``)."""

    bit: npt.NDArray[np.uint8] = field(repr=False)
    s: RingArray = field(repr=False)


@dataclass(frozen=True)
class DcfKey:
    """This party's part of ``dcf`` comparison keys (two computing parties): additive shares of a uniform ``r``
    and of ``b`` = bit ``depth`` of ``r``, and the party's keys of the DCFs of ``x -> (1 - 2 b) [x < r mod
    2^depth]`` (:mod:`mpdp.crypto.fss`: its own root ``seed`` of shape ``(*shape, 2)``, the common corrections
    ``cw`` and ``last``), one per element; ``party`` is this party's position (0 or 1), ``issuer`` identifies
    the provider that dealt them (keys are used only where they were dealt)."""

    r: RingArray = field(repr=False)
    seed: RingArray = field(repr=False)
    b: RingArray = field(repr=False)
    cw: RingArray = field(repr=False)
    last: RingArray = field(repr=False)
    depth: int
    party: int
    issuer: bytes = b""


@dataclass(frozen=True)
class MaskedMaterial:
    """This party's parts of a masked-wire plan (:mod:`mpdp.crypto.masked.plan`: part name -> array), bound to the
    plan (``digest``) and to the provider that dealt them (``issuer``): an executor refuses material of another
    plan or session before it opens anything (:mod:`mpdp.protocols.mpc.masked`)."""

    parts: dict[str, RingArray] = field(repr=False)
    digest: bytes
    issuer: bytes
    party: int


class TripleSource(abc.ABC):
    """Supplies this party's shares of multiplication triples (the part HE backends generate)."""

    @abc.abstractmethod
    def mul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        """Shares of uniform ``a`` (shape ``a_shape``), ``b`` (``b_shape``) and ``c = a * b`` (broadcast)."""

    @abc.abstractmethod
    def matmul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        """Shares of uniform ``A`` (``a_shape``), ``B`` (``b_shape``) and ``C = A @ B``."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources and tell helpers (e.g. a dealer) that no more correlations are needed."""


class CorrelationProvider(TripleSource):
    """Supplies every correlation the fixed-point protocols use."""

    @abc.abstractmethod
    def square_pair(self, ring: Ring, shape: tuple[int, ...]) -> SquarePair:
        """Shares of uniform ``a`` and ``c = a^2``."""

    @abc.abstractmethod
    def wrap_mask(self, ring_in: Ring, ring_out: Ring, shape: tuple[int, ...], shift: int) -> WrapMask:
        """Shares for the wrap-corrected shift from ``ring_in`` to ``ring_out`` dropping ``shift`` bits."""

    @abc.abstractmethod
    def compare_mask(self, ring: Ring, shape: tuple[int, ...]) -> CompareMask:
        """Shares of uniform ``r``, additively and bitwise."""

    @abc.abstractmethod
    def and_triple(self, shape: tuple[int, ...]) -> BitTriple:
        """XOR shares of uniform words ``a``, ``b`` and ``c = a & b``."""

    @abc.abstractmethod
    def dabit(self, ring: Ring, shape: tuple[int, ...]) -> DaBit:
        """A uniform bit per element, shared both ways."""

    def masked_product(self, kind: str, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                       shift: int, *, out_ring: Ring | None = None) -> MaskedProduct:
        """A :class:`MaskedProduct` for ``kind`` ``"mul"``, ``"matmul"`` or ``"square"`` (``b_shape`` unused),
        whose product is truncated by ``shift`` bits (spec kind ``kind + "_wrap"``) into ``out_ring`` (default
        ``ring``; at most as wide).

        The default composes a triple (or square pair) and a wrap mask: ``c + r`` from this party's shares.
        A dealer deals it directly, one uniform element per value cheaper.
        """
        if kind == "square":
            pair = self.square_pair(ring, a_shape)
            a, b, c, out = pair.a, pair.a, pair.c, a_shape
        elif kind in ("mul", "matmul"):
            t = self.mul_triple(ring, a_shape, b_shape) if kind == "mul" else self.matmul_triple(ring, a_shape, b_shape)
            a, b, c, out = t.a, t.b, t.c, ring.shape(t.c)
        else:
            raise ParameterError(explain("kind", kind, "'mul', 'matmul' or 'square'", "name the product"))
        mask = self.wrap_mask(ring, out_ring or ring, out, shift)
        return MaskedProduct(a, b, ring.add(c, mask.r), mask.msb, mask.low)

    @property
    def deals_dcf_keys(self) -> bool:
        """Whether :meth:`dcf_key` is available (a dealer with two computing parties deals them)."""
        return False

    @property
    def dcf_issuer(self) -> bytes:
        """The ``issuer`` of the :class:`DcfKey` this provider deals."""
        return b""

    def dcf_key(self, ring: Ring, shape: tuple[int, ...], depth: int) -> DcfKey:
        """This party's :class:`DcfKey` for ``shape`` elements of ``ring`` compared on ``depth + 1`` bits."""
        raise ParameterError(explain("provider", type(self).__name__, "a provider that deals DCF keys",
                                     "check deals_dcf_keys first (a TrustedDealer with two computing parties)"))

    @property
    def deals_owned_products(self) -> bool:
        """Whether :meth:`owned_product` is available (a dealer deals them; composing them from triples and
        masks is not possible, so protocols fall back to a product of shared operands)."""
        return False

    @property
    def deals_masked_plans(self) -> bool:
        """Whether :meth:`masked_material` is available (a dealer with two computing parties deals masked-wire
        plans: their masks must be known to one party that computes nothing, and their comparison keys are
        two-party)."""
        return False

    def masked_material(self, plan: MaskedPlan) -> MaskedMaterial:
        """This party's :class:`MaskedMaterial` for ``plan`` (spec kind ``masked``)."""
        raise ParameterError(explain("provider", type(self).__name__, "a provider that deals masked-wire plans",
                                     "check deals_masked_plans first (a TrustedDealer with two computing parties)"))

    def owned_product(self, kind: str, owner: int, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                      shift: int, *, out_ring: Ring | None = None) -> OwnedProduct:
        """An :class:`OwnedProduct` for ``X @ y`` (``kind`` ``"matmul"``) or ``X * y`` (``"mul"``), ``X`` of
        ``a_shape`` held by the party at position ``owner``, ``y`` of ``b_shape``, truncated by ``shift`` bits
        into ``out_ring`` (default ``ring``)."""
        raise ParameterError(explain("provider", type(self).__name__, "a provider that deals owned products",
                                     "check deals_owned_products first (a TrustedDealer's DealerProvider deals them)"))

    def prefetch(self, specs: Sequence[CorrelationSpec]) -> None:
        """Announce the next correlations, in the order they will be asked for, so that a provider can
        fetch them in one exchange (the dealer does). The default does nothing."""

    def retain(self, specs: Sequence[CorrelationSpec]) -> None:
        """Drop prefetched correlations beyond ``specs`` (a multiset: those the program may still ask for).

        Prefetched correlations that no operation asks for (a planned block whose shapes changed since its
        plan was recorded) would otherwise stay queued for the rest of the session, and every later lookup
        would pass over them. Every computing party must call it at the same point of the same program, with
        the same ``specs``: the queues then stay equal, as requests require. A dropped correlation is never
        used (nothing is revealed); one asked for later is fetched anew. The default queues nothing.
        """


def _product_shape(spec: CorrelationSpec) -> tuple[int, ...]:
    return draw_shape(spec, "c")[1:] if spec.ring_bits == 128 else draw_shape(spec, "c")


class WithTriplesFrom(CorrelationProvider):
    """Triples from ``triples`` (e.g. Paillier-generated), everything else from ``rest`` (e.g. a dealer)."""

    def __init__(self, triples: TripleSource, *, rest: CorrelationProvider) -> None:
        self.triples = triples
        self.rest = rest

    def mul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        return self.triples.mul_triple(ring, a_shape, b_shape)

    def matmul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        return self.triples.matmul_triple(ring, a_shape, b_shape)

    def square_pair(self, ring: Ring, shape: tuple[int, ...]) -> SquarePair:
        return self.rest.square_pair(ring, shape)

    def wrap_mask(self, ring_in: Ring, ring_out: Ring, shape: tuple[int, ...], shift: int) -> WrapMask:
        return self.rest.wrap_mask(ring_in, ring_out, shape, shift)

    def compare_mask(self, ring: Ring, shape: tuple[int, ...]) -> CompareMask:
        return self.rest.compare_mask(ring, shape)

    def and_triple(self, shape: tuple[int, ...]) -> BitTriple:
        return self.rest.and_triple(shape)

    def dabit(self, ring: Ring, shape: tuple[int, ...]) -> DaBit:
        return self.rest.dabit(ring, shape)

    @property
    def deals_dcf_keys(self) -> bool:
        return self.rest.deals_dcf_keys

    @property
    def dcf_issuer(self) -> bytes:
        return self.rest.dcf_issuer

    def dcf_key(self, ring: Ring, shape: tuple[int, ...], depth: int) -> DcfKey:
        return self.rest.dcf_key(ring, shape, depth)

    @property
    def deals_masked_plans(self) -> bool:
        return self.rest.deals_masked_plans

    def masked_material(self, plan: MaskedPlan) -> MaskedMaterial:
        return self.rest.masked_material(plan)

    def prefetch(self, specs: Sequence[CorrelationSpec]) -> None:
        self.rest.prefetch(self._rest_specs(specs))

    @staticmethod
    def _rest_specs(specs: Sequence[CorrelationSpec]) -> list[CorrelationSpec]:
        """The correlations ``rest`` supplies for ``specs``: masked products are composed here (triples from
        ``triples``), so the rest supplies their other parts."""
        rest: list[CorrelationSpec] = []
        for s in specs:
            if s.kind == "square_wrap":
                rest.append(CorrelationSpec("square", s.ring_bits, s.shape))
            if s.kind.endswith("_wrap"):
                rest.append(CorrelationSpec("wrap", s.ring_bits, _product_shape(s), out_ring_bits=s.out_ring_bits,
                                            shift=s.shift))
            elif s.kind not in ("mul", "matmul"):
                rest.append(s)
        return rest

    def retain(self, specs: Sequence[CorrelationSpec]) -> None:
        self.rest.retain(self._rest_specs(specs))

    def close(self) -> None:
        self.triples.close()
        self.rest.close()
