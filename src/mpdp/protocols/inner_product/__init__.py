"""Secure inner products and cross-party matrix products ``X^T Y`` between two data holders.

Party ``left`` holds ``X`` (n x a), party ``right`` holds ``Y`` (n x b) over the same n records (vectors are
n x 1). They learn ``X^T Y`` (a x b) as additive shares over Z_2^l at scale 2^(2f) (:class:`CrossProduct`
``.share``), or one of them learns it in the clear (``reveal_to``). Every backend computes the matrix form in
one pass: no loop of d_k x d_l scalar inner products.

Backends (:class:`SharesBackend`, :class:`PaillierBackend`, :class:`CkksBackend`):

``shares``: the commodity-server form of a Beaver matrix triple: a dealer deals correlated randomness and the
    holders exchange one masked matrix each (:mod:`~mpdp.protocols.inner_product.shares`).
``paillier``: ``left`` (the key owner) encrypts its rows packed, ``right`` computes the masked product under
    encryption (:mod:`~mpdp.protocols.inner_product.paillier`).
``ckks``: approximate arithmetic and real-valued shares (:mod:`~mpdp.protocols.inner_product.ckks`).

Layout
------
The modules form layers, each importing only those above it in this list:

* :mod:`~mpdp.protocols.inner_product.ckks_parameters`: the CKKS backend's public parameters, its spec check
  and its error bound, from public numbers (no spec type);
* :mod:`~mpdp.protocols.inner_product.spec`: the backends' parameter classes (each with the check it adds to a
  spec and its error bound), :class:`CrossProductSpec` and :class:`CrossProduct`;
* :mod:`~mpdp.protocols.inner_product.ring_output`: the exact backends' ring-share output step;
* one module per backend protocol: :mod:`~mpdp.protocols.inner_product.shares`,
  :mod:`~mpdp.protocols.inner_product.paillier`, :mod:`~mpdp.protocols.inner_product.ckks`;
* :mod:`~mpdp.protocols.inner_product.run`: :func:`cross_product` (the dispatch to the backend's protocol),
  :func:`cross_product_share` and :func:`simulate_cross_product`.

A backend's parameters sit below the spec and its protocol above it because the spec needs the former (its
default is ``SharesBackend()``, and it refuses bad backend settings at construction) while the protocols need the
spec; the CKKS numbers are a module of their own so that the spec can use them without the protocol, and
without loading TenSEAL until a CKKS spec is built. :func:`cross_product` imports the CKKS protocol when a CKKS
product runs, for the same reason.

Security
--------
Semi-honest parties. ``shares``: each party sees only a uniformly masked matrix from the other; the dealer sees
nothing of the inputs and must not collude with either holder. ``paillier``: ``right`` sees only ciphertexts
under ``left``'s key (DCR; with ``randomizer="fixed-base"`` also the DJN short-exponent assumption); ``left``
sees ``X^T Y + R`` with ``R`` uniform on ``[0, 2^(bits(bound) + mask_bits))``, statistically hiding with
distance ``2^-mask_bits`` per entry, and the returned ciphertext is rerandomized. ``ckks``: statistical hiding
within ``B / 2^mask_bits`` only (:mod:`~mpdp.protocols.inner_product.ckks`). With ``reveal_to`` the named party
learns ``X^T Y`` and nothing else; the other learns nothing.

Accuracy
--------
Inputs are rounded to the grid 2^-f of ``fmt``; the products and sums are then exact (in the ring, or over the
integers for Paillier), so per entry ``|result - X^T Y| <= n (2 bound 2^-(f+1) + 2^-(2f+2))``
(:attr:`CrossProductSpec.error_bound`); typical errors are about ``sqrt(n) bound 2^-f``. The spec is refused
(:class:`~mpdp.errors.PrecisionError`) unless ``n bound^2 2^(2f) < 2^(l-2)`` so nothing wraps. CKKS is
approximate: :func:`~mpdp.protocols.inner_product.ckks_parameters.ckks_error_bound`.

References
----------
W. Du, M. Atallah, "Privacy-preserving cooperative statistical analysis", ACSAC 2001 (commodity server);
D. Beaver, "Efficient multiparty protocols using circuit randomization", CRYPTO 1991; P. Paillier, EUROCRYPT
1999; paper 000 (Xu et al., IEEE BigData 2021): the cross-party coefficients sum_i v_i^k v_i^l.
"""

from mpdp.protocols.inner_product.run import cross_product, cross_product_share, simulate_cross_product
from mpdp.protocols.inner_product.spec import (
    CkksBackend,
    CrossProduct,
    CrossProductSpec,
    PaillierBackend,
    SharesBackend,
)

__all__ = [
    "CkksBackend",
    "CrossProduct",
    "CrossProductSpec",
    "PaillierBackend",
    "SharesBackend",
    "cross_product",
    "cross_product_share",
    "simulate_cross_product",
]
