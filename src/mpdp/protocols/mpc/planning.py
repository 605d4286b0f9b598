"""Prefetch a repeated program's correlations in one request: :class:`PlannedProvider`.

An iterative protocol (a DP-SGD step, a training epoch) runs the same sequence of secure operations many
times. Each operation announces its correlations to the provider (``prefetch``) as it starts, so a dealer-backed
provider sends one request per operation and the first party waits for the dealer's corrections operation by
operation. :class:`PlannedProvider` wraps any provider: inside ``with provider.planned(key):`` it records the
correlations the block consumes; the next time a block with the same ``key`` starts, it prefetches that whole
list at once, and the operations' own announcements find everything already queued (providers skip correlations
already pending). The key must determine the sequence of operations and shapes (e.g. the minibatch size);
every computing party must use the same keys in the same order (they run the same program). Each run
re-records the block's plan, so a block whose shapes change (rarely) is planned from its latest run; the
correlations prefetched for the old shapes are dropped when the block ends (``retain``: only the next block's
plan stays queued), so that stale ones cannot pile up over a long training.

Nothing about the computation changes: the same correlations are consumed in the same order; only when they
are fetched does. Security is that of the wrapped provider.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Sequence

from mpdp.crypto.correlations import CorrelationSpec
from mpdp.crypto.correlations import spec as _spec
from mpdp.crypto.masked.plan import MaskedPlan
from mpdp.crypto.ring import Ring
from mpdp.errors import ParameterError, explain
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

__all__ = ["PlannedProvider"]


class PlannedProvider(CorrelationProvider):
    """A provider that remembers, per key, the correlations a block consumed and prefetches them next time."""

    def __init__(self, inner: CorrelationProvider) -> None:
        if not isinstance(inner, CorrelationProvider):
            raise ParameterError(explain("inner", inner, "a CorrelationProvider", "wrap e.g. a DealerProvider"))
        self.inner = inner
        self.plans: dict[Hashable, list[CorrelationSpec]] = {}
        self._recording: list[CorrelationSpec] | None = None

    @contextlib.contextmanager
    def planned(self, key: Hashable, *, ahead: Hashable | None = None) -> Iterator[None]:
        """Run a block whose correlations are prefetched together (from the second time ``key`` is seen).

        With ``ahead``, the key of the block that will run next, that block's plan (when known) is requested
        together with this block's, as this block starts (or as it ends, the block that records the plan): the
        dealer prepares the next block's corrections while the parties compute this one, and the next block
        starts without a request/reply round trip of its own. Every party must then run a block with key
        ``ahead`` next (pass it only when that is certain); otherwise the correlations stay queued until
        consumed or the provider is closed. The correlations are the same either way: requests keep their order.
        """
        if self._recording is not None:
            raise ParameterError(explain("planned blocks", "nested", "one block at a time", "do not nest planned()"))
        plan = self.plans.get(key)
        if plan is not None:
            upcoming = self.plans.get(ahead, []) if ahead is not None else []
            # Correlations already queued are not fetched again (providers skip pending ones, counting
            # repeats): when the previous block requested this one's plan ahead, only the next plan is fetched.
            self.inner.prefetch(plan + upcoming)
        self._recording = []
        try:
            yield
            # Every run of the block is recorded: when its shapes drift (a DP-SGD step's public bounds move
            # with theta), the next run is planned from the latest one instead of fetching the difference
            # operation by operation, run after run.
            self.plans[key] = self._recording
        finally:
            self._recording = None
        upcoming = self.plans.get(ahead, []) if ahead is not None else []
        if plan is None and upcoming:
            self.inner.prefetch(upcoming)
        # What the block prefetched and did not use (its shapes changed since its plan was recorded) is dropped:
        # only the next block's plan stays queued. Kept, such leftovers would pile up over a training whose
        # public bounds drift, and every lookup would pass over them.
        self.inner.retain(upcoming)

    # -- delegation ------------------------------------------------------------------------------------------
    # Each method records its spec inline when a block is being recorded (no helper call: these run once per
    # correlation, on the DPVI step's hot path).
    def prefetch(self, specs: Sequence[CorrelationSpec]) -> None:
        self.inner.prefetch(specs)

    def retain(self, specs: Sequence[CorrelationSpec]) -> None:
        self.inner.retain(specs)

    def mul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        spec = _spec("mul", ring.bits, a_shape, b_shape)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.mul_triple(ring, a_shape, b_shape)

    def matmul_triple(self, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> BeaverTriple:
        spec = _spec("matmul", ring.bits, a_shape, b_shape)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.matmul_triple(ring, a_shape, b_shape)

    def square_pair(self, ring: Ring, shape: tuple[int, ...]) -> SquarePair:
        spec = _spec("square", ring.bits, shape)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.square_pair(ring, shape)

    def wrap_mask(self, ring_in: Ring, ring_out: Ring, shape: tuple[int, ...], shift: int) -> WrapMask:
        spec = _spec("wrap", ring_in.bits, shape, out_ring_bits=ring_out.bits, shift=shift)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.wrap_mask(ring_in, ring_out, shape, shift)

    def compare_mask(self, ring: Ring, shape: tuple[int, ...]) -> CompareMask:
        spec = _spec("compare", ring.bits, shape)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.compare_mask(ring, shape)

    def and_triple(self, shape: tuple[int, ...]) -> BitTriple:
        spec = _spec("and", 64, shape)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.and_triple(shape)

    def dabit(self, ring: Ring, shape: tuple[int, ...]) -> DaBit:
        spec = _spec("dabit", ring.bits, shape)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.dabit(ring, shape)

    def masked_product(self, kind: str, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                       shift: int, *, out_ring: Ring | None = None) -> MaskedProduct:
        square = kind == "square"
        spec = _spec(kind + "_wrap", ring.bits, a_shape, () if square else b_shape,
                     out_ring_bits=(out_ring or ring).bits, shift=shift)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.masked_product(kind, ring, a_shape, b_shape, shift, out_ring=out_ring)

    @property
    def deals_owned_products(self) -> bool:
        return self.inner.deals_owned_products

    def owned_product(self, kind: str, owner: int, ring: Ring, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                      shift: int, *, out_ring: Ring | None = None) -> OwnedProduct:
        spec = _spec(kind + "_owned_wrap", ring.bits, a_shape, b_shape, out_ring_bits=(out_ring or ring).bits,
                     shift=shift, owner=owner)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.owned_product(kind, owner, ring, a_shape, b_shape, shift, out_ring=out_ring)

    @property
    def deals_dcf_keys(self) -> bool:
        return self.inner.deals_dcf_keys

    @property
    def dcf_issuer(self) -> bytes:
        return self.inner.dcf_issuer

    def dcf_key(self, ring: Ring, shape: tuple[int, ...], depth: int) -> DcfKey:
        spec = _spec("dcf", ring.bits, shape, shift=depth)
        if self._recording is not None:
            self._recording.append(spec)
        return self.inner.dcf_key(ring, shape, depth)

    @property
    def deals_masked_plans(self) -> bool:
        return self.inner.deals_masked_plans

    def masked_material(self, plan: MaskedPlan) -> MaskedMaterial:
        if self._recording is not None:
            self._recording.append(_spec("masked", 128, (), plan=plan))
        return self.inner.masked_material(plan)

    def close(self) -> None:
        self.inner.close()
