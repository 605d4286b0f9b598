"""The entry points: each party's side of ``X^T Y`` (:func:`cross_product`), dispatched to its backend's
protocol, the two-party real-valued form (:func:`cross_product_share`) and the in-memory simulation."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.crypto.ring import RingArray
from mpdp.errors import DomainError, MalformedMessageError, ParameterError, PrecisionError, ShapeMismatchError, explain
from mpdp.numeric import real_array
from mpdp.progress import SILENT, Progress
from mpdp.protocols.inner_product.paillier import paillier_holder
from mpdp.protocols.inner_product.ring_output import check_ring
from mpdp.protocols.inner_product.shares import shares_dealer, shares_holder
from mpdp.protocols.inner_product.spec import (
    Backend,
    CkksBackend,
    CrossProduct,
    CrossProductSpec,
    PaillierBackend,
    SharesBackend,
)
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm
from mpdp.runtime.party import ProtocolRun, run_protocol

__all__ = ["cross_product", "cross_product_share", "simulate_cross_product"]


def _as_matrix(data: Any, rows: int, cols: int, bound: float, who: str) -> npt.NDArray[np.float64]:
    """``who``'s data as a ``rows x cols`` float matrix (a vector becomes one column), refused unless it has that
    shape and finite entries within the public ``bound``."""
    m = real_array(data, f"data of {who}")
    if m.ndim == 1 and cols == 1:
        m = m[:, None]
    if m.shape != (rows, cols):
        raise ShapeMismatchError(explain(f"data of {who}", m.shape, f"({rows}, {cols})",
                                         "both holders must hold the same records, in the same order"))
    if not np.all(np.isfinite(m)) or (m.size and float(np.max(np.abs(m))) > bound):
        raise DomainError(explain(f"data of {who}", "entries beyond the bound or not finite", f"|x| <= {bound:g}",
                                  "clip or rescale the data to the declared bound"))
    return m


def cross_product(comm: Comm, data: Any, spec: CrossProductSpec, *, keys: Any = None,
                  progress: Progress = SILENT) -> CrossProduct | None:
    """This party's side of ``X^T Y``: ``left`` passes X, ``right`` passes Y, the dealer passes None.

    ``keys`` (left): a Paillier ``(public_key, private_key)`` pair, or ``(public_key, private_key, pool)`` with
    randomizers precomputed offline (:class:`~mpdp.crypto.paillier.RandomizerPool`, each used once; the online
    encryption is then one multiplication per ciphertext), or CKKS keys
    (:func:`mpdp.protocols.inner_product.ckks.new_context`), to reuse instead of generating them per run.
    ``data`` may be 1-D (n,) for a vector. Returns this holder's :class:`CrossProduct` (None at the dealer).
    ``progress`` shows this holder's steps and, for the encrypted backends, bars over their long loops.
    """
    backend = spec.backend
    if isinstance(backend, SharesBackend) and comm.name == backend.dealer:
        if data is not None:
            raise ParameterError(explain("data at the dealer", "an array", "None", "the dealer holds no data"))
        shares_dealer(comm, spec)
        return None
    if comm.name not in (spec.left, spec.right):
        raise ParameterError(explain("party", comm.name, f"{spec.left!r}, {spec.right!r} or the dealer",
                                     "run cross_product on the holders (and the dealer)"))
    cols = spec.left_cols if comm.name == spec.left else spec.right_cols
    m = _as_matrix(data, spec.rows, cols, spec.bound, comm.name)
    if isinstance(backend, SharesBackend):
        return shares_holder(comm, spec, m)
    if isinstance(backend, PaillierBackend):
        return paillier_holder(comm, spec, m, keys, progress=progress)
    from mpdp.protocols.inner_product.ckks import ckks_holder  # loads TenSEAL, so only when a CKKS product runs

    return ckks_holder(comm, spec, m, keys, progress=progress)


def cross_product_share(comm: Comm, peer: str, mine: Any, *, left: bool, backend: str = "shares",
                        **options: Any) -> npt.NDArray[np.float64]:
    """Two-party convenience form: this party's *real-valued* additive share of ``A^T B``.

    The party with ``left=True`` holds ``A`` (n x p), ``peer`` holds ``B`` (n x m); both call this and get a
    p x m float array, and the two arrays add up to ``A^T B`` (within the backend's error bound). The holders
    first exchange their matrix shapes (public) and refuse different record counts.

    Parameters
    ----------
    backend:
        ``"paillier"``; ``"ckks"``; or ``"shares"``: with ``dealer=NAME`` in the options, the dealer's matrix
        triple (that party must run ``cross_product(comm, None, spec)``); without a dealer, two parties cannot
        make Beaver triples alone, so the triple's cross terms come from Paillier (HE-generated correlations),
        which is the ``paillier`` computation.
    options:
        ``bound`` (public bound on |entries|, default 1.0), ``share_bound`` (largest |real share|, default 2^24),
        ``mask_bits`` (statistical hiding of the real shares; default: as many bits as fit between the
        product's bound ``B = n bound^2`` and ``share_bound``, at most 40), ``key_bits``, ``insecure_for_tests``,
        ``dealer``, ``keys`` (left: a Paillier key pair to reuse).

    Security
    --------
    As :func:`cross_product` for the backend, except that real-valued shares hide each entry only with
    statistical distance ``2^-mask_bits`` (Paillier, dealer) or as stated in
    :mod:`mpdp.protocols.inner_product.ckks` (CKKS). Small shares mean weak masks: with the defaults and
    ``B = 300`` that is 2^-15 per entry. Prefer :func:`cross_product`'s ring shares (2^-40) where the consumer
    can work in the ring.
    """
    m = real_array(mine, f"data of {comm.name}")
    if m.ndim == 1:
        m = m[:, None]
    if m.ndim != 2:
        raise ShapeMismatchError(explain(f"data of {comm.name}", m.shape, "an n x k matrix", "pass a 2-D array"))
    theirs = comm.exchange(peer, [int(m.shape[0]), int(m.shape[1])], label="ip.shape")
    if not isinstance(theirs, list) or len(theirs) != 2 or not all(isinstance(v, int) for v in theirs):
        raise MalformedMessageError(explain(f"shape from {peer}", theirs, "[rows, cols]", "out of step"))
    if theirs[0] != m.shape[0]:
        raise ShapeMismatchError(explain(f"record count of {peer}", theirs[0], f"{m.shape[0]} (as {comm.name})",
                                         "both holders must hold the same records, in the same order"))
    names = (comm.name, peer) if left else (peer, comm.name)
    cols = (m.shape[1], theirs[1]) if left else (theirs[1], m.shape[1])
    bound = float(options.get("bound", 1.0))
    # Real shares must stay below share_bound (callers that add grid noise to a share need them small), so
    # the statistical mask gets the bits left between the product's bound and share_bound, at most 40.
    result_bound = int(m.shape[0]) * bound * bound
    fitting = int(np.floor(np.log2(float(options.get("share_bound", 2.0**24)) / (2 * result_bound))))
    mask_bits = int(options.get("mask_bits", max(1, min(40, fitting))))
    chosen: Backend
    if backend == "ckks":
        share_bits = int(np.floor(np.log2(float(options.get("share_bound", 2.0**24))))) - 1
        chosen = CkksBackend(mask_bits=max(1, min(23, share_bits)))
    elif backend == "shares" and "dealer" in options:
        chosen = SharesBackend(dealer=str(options["dealer"]))
    elif backend in ("shares", "paillier"):
        chosen = PaillierBackend(key_bits=int(options.get("key_bits", 2048)),
                                 mask_bits=mask_bits,
                                 insecure_for_tests=bool(options.get("insecure_for_tests", False)))
    else:
        raise ParameterError(explain("backend", backend, "'shares', 'paillier' or 'ckks'", "pick a backend"))
    spec = CrossProductSpec(names[0], names[1], int(m.shape[0]), int(cols[0]), int(cols[1]), chosen, bound=bound)
    data = _as_matrix(m, spec.rows, m.shape[1], bound, comm.name)
    if isinstance(chosen, PaillierBackend):
        result = paillier_holder(comm, spec, data, options.get("keys") if left else None, real=True)
    else:
        out = cross_product(comm, data, spec)
        if out is None:  # pragma: no cover - holders always get a result
            raise ParameterError("no share")
        result = out
    if result.real:
        real: npt.NDArray[np.float64] = np.asarray(result.share, dtype=np.float64)
        return real
    # Ring shares (dealer triple): move to real shares with a bounded integer mask of mask_bits bits.
    return _ring_to_real(comm, peer, spec, result.share, left=left, mask_bits=mask_bits)


def _ring_to_real(comm: Comm, peer: str, spec: CrossProductSpec, share: RingArray, *, left: bool,
                  mask_bits: int) -> npt.NDArray[np.float64]:
    """Ring shares of V (|V| 2^(2f) < 2^(l-2)) -> real shares: the right holder masks its share with an integer
    R < 2^(bits(bound) + mask_bits) and sends it; the left holder opens V + R (exact: no wrap), the right keeps -R."""
    fmt, ring = spec.fmt, spec.fmt.ring
    bound_bits = int(np.ceil(np.log2(spec.result_bound + 1))) + spec.scale_bits
    mask_bits = min(mask_bits, fmt.raw_capacity_bits - bound_bits)  # the ring must hold V + R exactly
    bits = bound_bits + mask_bits
    if mask_bits < 1:
        raise PrecisionError(explain("mask_bits", mask_bits, f"<= {fmt.raw_capacity_bits - bound_bits} in {fmt}",
                                     "use fewer mask bits or FixedPointFormat(128, ...)"))
    shape = (spec.left_cols, spec.right_cols)
    if not left:
        r = comm.rng.randbelow_many(1 << bits, int(np.prod(shape)))
        mask = np.empty(len(r), dtype=object)
        mask[:] = r
        comm.send(peer, ring.add(share, ring.from_int(mask.reshape(shape))), label="ip.real")
        real_share: npt.NDArray[np.float64] = -mask.reshape(shape).astype(np.float64) * 2.0 ** -spec.scale_bits
        return real_share
    theirs = check_ring(comm.recv(peer, label="ip.real"), spec, shape, f"masked share from {peer}")
    return fmt.decode(ring.add(share, theirs), scale_bits=spec.scale_bits)


def simulate_cross_product(X: Any, Y: Any, spec: CrossProductSpec, *, rng: RandomSource | None = None,
                           keys: Any = None, timeout: float = 120.0) -> ProtocolRun[Any]:
    """Run ``cross_product`` with every party in a thread of this process (tests, simulation, benchmarks).

    ``keys``: the left holder's Paillier key pair or CKKS secret context to reuse; ``timeout``: seconds a party
    waits for a message (a 45,222-row Paillier encryption takes minutes).
    """
    roles: dict[str, Any] = {
        spec.left: lambda c: cross_product(c, X, spec, keys=keys),
        spec.right: lambda c: cross_product(c, Y, spec),
    }
    if isinstance(spec.backend, SharesBackend):
        roles[spec.backend.dealer] = lambda c: cross_product(c, None, spec)
    return run_protocol(roles, rng=rng, timeout=timeout)
