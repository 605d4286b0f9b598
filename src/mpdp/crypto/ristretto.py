"""Batches of ristretto255 group operations: hash to the group, exponentiate, validate.

ristretto255 (RFC 9496) is a prime-order group of order ``l = 2^252 + 27742317777372353535851937790883648493``
built on Curve25519: every valid 32-byte encoding is a group element, there is no cofactor to clear, and
hashing to the group is the standard one-way map of 64 uniform bytes (RFC 9496, section 4.3.4). All group
arithmetic is libsodium's (``crypto_core_ristretto255_from_hash``, ``crypto_scalarmult_ristretto255``,
``crypto_core_ristretto255_is_valid_point``), the build bundled in the ``rbcl`` wheel. No curve arithmetic is
written here: this module only loops over batches.

A batch of ``n`` elements is one ``bytes`` object of ``32 n`` bytes (element ``i`` at ``[32 i, 32 i + 32)``),
which is also how batches travel in messages. Every function splits its batch into chunks and runs them on
``workers`` threads: each element is one ctypes call into libsodium, which releases the GIL, so the threads
use every core without copying the batch to other processes.

Exponentiation refuses a batch holding any byte string that is not a canonical encoding of a group element,
and refuses to produce the identity, raising :class:`~mpdp.errors.InvalidGroupElementError` with the position
of the first offender: a received batch is validated by the very operation that uses it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from mpdp.errors import InvalidGroupElementError, ParameterError, explain
from mpdp.randomness import RandomSource

__all__ = [
    "ELEMENT_BYTES",
    "SCALAR_BYTES",
    "default_workers",
    "exponentiate",
    "hash_to_group",
    "random_scalar",
    "split_elements",
    "validate",
]

ELEMENT_BYTES = 32
SCALAR_BYTES = 32
_HASH_BYTES = 64
_CHUNK = 4096  # most elements per task: scheduling costs nothing next to 4096 group operations


@cache
def _sodium() -> Any:
    """Our own handle on the libsodium that ``rbcl`` bundled and initialised, with typed function pointers."""
    try:
        import rbcl
    except ImportError as exc:  # pragma: no cover - rbcl is a dependency
        raise ParameterError(explain("rbcl", "not installed", "the rbcl package (libsodium's ristretto255)",
                                     "pip install 'rbcl>=1.1.2'")) from exc
    lib = ctypes.CDLL(rbcl._sodium._name)  # the same loaded library; separate function objects for our argtypes
    ptr, cptr = ctypes.c_void_p, ctypes.c_char_p
    for name, args in (("crypto_core_ristretto255_from_hash", (ptr, cptr)),
                       ("crypto_scalarmult_ristretto255", (ptr, cptr, ptr)),
                       ("crypto_core_ristretto255_is_valid_point", (ptr,)),
                       ("crypto_core_ristretto255_scalar_reduce", (ptr, cptr))):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    return lib


def default_workers() -> int:
    """Threads for group operations: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _address(data: bytes) -> int:
    """The address of ``data``'s buffer (kept alive by the caller for as long as it is used)."""
    address = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    return int(address or 0)


def _count(points: bytes, what: str) -> int:
    if not isinstance(points, bytes | bytearray):
        raise InvalidGroupElementError(explain(what, type(points).__name__, "bytes holding 32-byte elements",
                                               "send group elements as one bytes object"))
    if len(points) % ELEMENT_BYTES:
        raise InvalidGroupElementError(explain(f"length of {what}", len(points), "a multiple of 32 bytes",
                                               "the sender must send whole ristretto255 elements"))
    return len(points) // ELEMENT_BYTES


def _run_chunks(n: int, task: Callable[[int, int], int], workers: int | None) -> int:
    """Run ``task(start, stop)`` over ``range(n)`` in chunks on ``workers`` threads; the smallest failing index
    any task reports (``-1`` when none failed)."""
    threads = default_workers() if workers is None else int(workers)
    if threads < 1:
        raise ParameterError(explain("workers", workers, "an int >= 1 or None", "pass e.g. workers=2"))
    chunk = max(64, min(_CHUNK, -(-n // (4 * threads))))  # at least 4 tasks per thread, to balance them
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    if threads == 1 or len(bounds) <= 1:
        failures = [task(a, b) for a, b in bounds]
    else:
        with ThreadPoolExecutor(max_workers=min(threads, len(bounds))) as pool:
            failures = list(pool.map(lambda ab: task(*ab), bounds))
    bad = [f for f in failures if f >= 0]
    return min(bad) if bad else -1


def random_scalar(rng: RandomSource) -> bytes:
    """A uniform non-zero scalar modulo the group order, drawn from ``rng`` (64 bytes reduced mod l)."""
    lib = _sodium()
    out = ctypes.create_string_buffer(SCALAR_BYTES)
    while True:
        lib.crypto_core_ristretto255_scalar_reduce(ctypes.addressof(out), rng.bytes(_HASH_BYTES))
        scalar = out.raw
        if any(scalar):
            return scalar


def hash_to_group(messages: Sequence[bytes], *, domain: bytes, workers: int | None = None) -> bytes:
    """``H(m) = from_hash(SHA-512(len(domain) || domain || m))`` for every message, as one batch.

    ``domain`` separates this use of the hash from any other; the one-way map makes the discrete logarithm of
    every ``H(m)`` unknown to everyone.
    """
    given: Any = messages
    if isinstance(given, bytes | str) or not isinstance(given, Sequence) or not all(isinstance(m, bytes)
                                                                                   for m in given):
        raise ParameterError(explain("messages", type(messages).__name__, "a list of bytes",
                                     "encode each message (e.g. an identifier) to bytes first"))
    if not isinstance(domain, bytes) or len(domain) > 255:
        raise ParameterError(explain("domain", domain, "bytes of at most 255", "pass e.g. domain=b'mpdp.psi'"))
    n = len(messages)
    prefix = bytes([len(domain)]) + domain
    lib = _sodium()
    out = ctypes.create_string_buffer(ELEMENT_BYTES * n)
    base = ctypes.addressof(out)
    from_hash = lib.crypto_core_ristretto255_from_hash

    def task(start: int, stop: int) -> int:
        sha = hashlib.sha512
        for i in range(start, stop):
            from_hash(base + ELEMENT_BYTES * i, sha(prefix + messages[i]).digest())
        return -1

    _run_chunks(n, task, workers)
    return out.raw


def exponentiate(points: bytes, scalar: bytes, *, workers: int | None = None, what: str = "points") -> bytes:
    """``P^k`` (``k P`` in additive notation) for every element ``P`` of the batch ``points``.

    Raises :class:`~mpdp.errors.InvalidGroupElementError` naming the first element that is not a canonical
    ristretto255 encoding (or whose product is the identity); nothing is returned then.
    """
    n = _count(points, what)
    if not isinstance(scalar, bytes) or len(scalar) != SCALAR_BYTES:
        raise ParameterError(explain("scalar", type(scalar).__name__, "32 bytes", "draw it with random_scalar(rng)"))
    data = bytes(points)
    lib = _sodium()
    out = ctypes.create_string_buffer(ELEMENT_BYTES * n)
    base, src = ctypes.addressof(out), _address(data)
    mult = lib.crypto_scalarmult_ristretto255

    def task(start: int, stop: int) -> int:
        for i in range(start, stop):
            offset = ELEMENT_BYTES * i
            if mult(base + offset, scalar, src + offset) != 0:
                return i
        return -1

    bad = _run_chunks(n, task, workers)
    del data  # kept alive until every thread has read it
    if bad >= 0:
        raise InvalidGroupElementError(explain(f"{what}[{bad}]", points[ELEMENT_BYTES * bad:ELEMENT_BYTES * (bad + 1)],
                                               "a canonical ristretto255 element (not the identity)",
                                               "the sender is faulty or malicious: abort and do not retry with it"))
    return out.raw


def validate(points: bytes, *, workers: int | None = None, what: str = "points") -> int:
    """Check that every element of the batch is a canonical ristretto255 encoding; returns their number."""
    n = _count(points, what)
    data = bytes(points)
    src = _address(data)
    valid = _sodium().crypto_core_ristretto255_is_valid_point

    def task(start: int, stop: int) -> int:
        for i in range(start, stop):
            if valid(src + ELEMENT_BYTES * i) != 1:
                return i
        return -1

    bad = _run_chunks(n, task, workers)
    if bad >= 0:
        raise InvalidGroupElementError(explain(f"{what}[{bad}]", data[ELEMENT_BYTES * bad:ELEMENT_BYTES * (bad + 1)],
                                               "a canonical ristretto255 element",
                                               "the sender is faulty or malicious: abort and do not retry with it"))
    return n


def split_elements(points: bytes) -> list[bytes]:
    """The batch as a list of 32-byte elements."""
    n = _count(points, "points")
    return [points[ELEMENT_BYTES * i:ELEMENT_BYTES * (i + 1)] for i in range(n)]
