"""The correlations of one request, laid out once: a planned protocol step repeats the same request every step."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.correlations.corrections import corrections, word_corrections, word_path_applies
from mpdp.crypto.correlations.parts import draw, draw_plan, draw_shape, product_shape
from mpdp.crypto.correlations.specs import CorrelationSpec, corrected_parts, public_parts
from mpdp.crypto.prg import AesCtrPrg
from mpdp.crypto.ring import RingArray, UniformSource

__all__ = ["CorrelationBatch", "batch"]


class CorrelationBatch:
    """The correlations of one request, laid out once for every stream and reply.

    A planned protocol step requests the same list of correlations every step; laying the list out once
    (which words of a stream each part takes, where each correction sits in the dealer's reply) leaves
    per request one keystream call per stream and a slice per part, instead of a draw call per part.
    The parts are exactly those of :func:`draw` and :func:`deal` called spec by spec in list order (a
    stream serves its words in order however the draws are split; other streams fall back to that loop).

    Parameters
    ----------
    specs:
        The correlations, in request order.
    """

    __slots__ = ("_draw_layouts", "_fast", "_own_layout", "_public_sources", "correction_layout", "elements",
                 "public_layout", "public_total", "reply_offsets", "specs")

    def __init__(self, specs: Sequence[CorrelationSpec]) -> None:
        self.specs = tuple(specs)
        self._draw_layouts: dict[int, tuple[int, tuple[tuple[tuple[str, int, int, int, tuple[int, ...], int],
                                                               ...], ...]]] = {}
        own: list[tuple[int, int, tuple[int, ...], int] | None] = []
        pos = 0
        for s in self.specs:  # the dealer's masks of the *_wrap kinds, in request order
            if s.kind.endswith("_wrap"):
                shape = draw_shape(s, "c")
                own.append((pos, pos + math.prod(shape), shape, s.ring_bits))
                pos += math.prod(shape)
            else:
                own.append(None)
        self._own_layout = (pos, tuple(own))
        layout, offsets, pos = [], [0], 0
        for s in self.specs:  # party 0's corrections, as they follow each other in a reply
            entry = []
            for name in corrected_parts(s):
                shape = draw_shape(s, name)
                entry.append((name, shape, pos, pos + math.prod(shape)))
                pos += math.prod(shape)
            layout.append(tuple(entry))
            offsets.append(pos)
        self.correction_layout: tuple[tuple[tuple[str, tuple[int, ...], int, int], ...], ...] = tuple(layout)
        """Per correlation: ``(name, shape, start, stop)`` of each correction in the words of a full reply."""
        self.reply_offsets = tuple(offsets)
        """Where correlation ``i``'s corrections start in the words of a full reply (and the total, last)."""
        public, sources, pos = [], [], 0
        for s, laid in zip(self.specs, layout, strict=True):  # the public parts, as the other parties receive them
            names = public_parts(s)
            kept = []
            for name, shape, lo, hi in laid:
                if name in names:
                    kept.append((name, shape, pos, pos + hi - lo))
                    sources.append((lo, hi))
                    pos += hi - lo
            public.append(tuple(kept))
        self.public_layout: tuple[tuple[tuple[str, tuple[int, ...], int, int], ...], ...] = tuple(public)
        """Per correlation: ``(name, shape, start, stop)`` of each :data:`PUBLIC` part in the words of the message
        the dealer sends the parties other than party 0 (empty for most kinds)."""
        self.public_total = pos
        self._public_sources = tuple(sources)
        self.elements = sum(s.plan.elements if s.plan is not None else math.prod(s.shape) + math.prod(s.shape_b)
                            for s in self.specs)
        self._fast = tuple(word_path_applies(s) for s in self.specs)

    def public_words(self, reply: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """The words of the parties other than party 0's message (:attr:`public_layout`), taken from the words of
        party 0's full ``reply``, where the :data:`PUBLIC` parts travel among the corrections."""
        return np.concatenate([reply[lo:hi] for lo, hi in self._public_sources]) if self._public_sources \
            else np.zeros(0, dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.specs)

    def _draw_layout(self, index: int) -> tuple[int, tuple[tuple[tuple[str, int, int, int, tuple[int, ...], int],
                                                                   ...], ...]]:
        known = self._draw_layouts.get(index)
        if known is None:
            pos, per_spec = 0, []
            for s in self.specs:
                entry = []
                for name, how, shape, bits in draw_plan(s, index):
                    count = math.prod(shape)
                    words = (count + 63) // 64 if how == 2 else count
                    entry.append((name, how, pos, pos + words, shape, bits if how == 1 else count))
                    pos += words
                per_spec.append(tuple(entry))
            known = self._draw_layouts[index] = (pos, tuple(per_spec))
        return known

    def draw(self, stream: UniformSource, *, index: int) -> list[dict[str, npt.NDArray[Any]]]:
        """Every correlation's parts from ``stream``, the party at ``index``'s (:func:`draw` for each spec, in
        order)."""
        if type(stream) is not AesCtrPrg:
            return [draw(s, stream, index=index) for s in self.specs]
        total, per_spec = self._draw_layout(index)
        words = stream.uint64(total)
        out = []
        for entry in per_spec:
            parts: dict[str, npt.NDArray[Any]] = {}
            for name, how, start, stop, shape, arg in entry:
                w = words[start:stop]
                if how == 2:  # bits: arg is their count
                    parts[name] = np.unpackbits(w.view(np.uint8), count=arg, bitorder="little").reshape(shape)
                    continue
                if how == 1 and arg < 64:  # elements of a narrow ring: arg is its bits
                    np.bitwise_and(w, np.uint64((1 << arg) - 1), out=w)
                parts[name] = w if len(shape) == 1 else w.reshape(shape)  # a slice is already 1-D
            out.append(parts)
        return out

    def masks(self, own: UniformSource) -> list[RingArray | None]:
        """The dealer's masks ``r`` of the ``*_wrap`` correlations from its own stream (``None`` elsewhere)."""
        total, layout = self._own_layout
        if type(own) is not AesCtrPrg:
            return [None if at is None else s.ring.random(own, product_shape(s)) for s, at in zip(self.specs, layout,
                                                                                              strict=True)]
        words = own.uint64(total)
        out: list[RingArray | None] = []
        for at in layout:
            if at is None:
                out.append(None)
                continue
            start, stop, shape, bits = at
            w = words[start:stop]
            if bits < 64:
                np.bitwise_and(w, np.uint64((1 << bits) - 1), out=w)
            out.append(w.reshape(shape))
        return out

    def corrections(self, parts: Sequence[Sequence[dict[str, RingArray]]], masks: Sequence[RingArray | None],
                    start: int = 0, stop: int | None = None) -> npt.NDArray[np.uint64]:
        """Party 0's corrections of correlations ``start:stop``, flat: the words of a reply.

        ``parts`` holds each party's :meth:`draw` (party 0's first), ``masks`` the :meth:`masks`.
        """
        stop = len(self.specs) if stop is None else stop
        offset = self.reply_offsets[start]
        out = np.empty(self.reply_offsets[stop] - offset, dtype=np.uint64)
        specs, fast, layout = self.specs, self._fast, self.correction_layout
        for i in range(start, stop):
            dests = [view if len(shape) == 1 else view.reshape(shape)  # a slice is already 1-D
                     for _, shape, lo, hi in layout[i] for view in (out[lo - offset : hi - offset],)]
            if fast[i]:
                word_corrections(specs[i], [p[i] for p in parts], masks[i], dests)
            else:
                corrections(specs[i], [p[i] for p in parts], masks[i], dests)
        return out


@functools.lru_cache(maxsize=512)
def batch(specs: tuple[CorrelationSpec, ...]) -> CorrelationBatch:
    """The :class:`CorrelationBatch` of ``specs``, one shared object per distinct list (a planned step's
    request repeats every step)."""
    return CorrelationBatch(specs)
