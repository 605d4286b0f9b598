"""Private record alignment: which rows of vertically partitioned parties are the same person.

Vertical learning needs row ``i`` of every party to describe the same person. Organisations key their
records by an identifier (customer number, e-mail) in their own order, and each holds people the others do
not. :func:`align` (or :class:`AlignmentParty` as a role) runs an ECDH private set intersection over the
prime-order group ristretto255 between two or more parties; afterwards each party holds ``rows``, the
positions of its records in the intersection in one agreed order, so ``table[rows]`` is aligned everywhere::

    spec = AlignmentSpec(parties=("alice", "bob"), min_intersection=100)
    run_protocol({"alice": AlignmentParty("alice", alice_ids, spec),
                  "bob": AlignmentParty("bob", bob_ids, spec)})        # -> {"alice": Alignment, ...}

``simulate_alignment({"alice": ids_a, "bob": ids_b})`` does that in memory. Identifiers are normalised by
one rule (NFKC, strip, case-fold: :mod:`~mpdp.protocols.alignment.ids`); a column with empty or duplicate
identifiers is refused with their count before anything is sent. The protocol's steps and costs are in
:mod:`~mpdp.protocols.alignment.psi`; the group operations in :mod:`mpdp.crypto.ristretto`.

Security
--------
Model: semi-honest (honest but curious) parties; the group is ristretto255, the hash to the group its
standard one-way map (random-oracle model), and security rests on the decisional Diffie-Hellman assumption.

What every party learns: its own rows in the intersection and their agreed order (the order of the jointly
keyed values ``F(x)``, pseudorandom: no party's row order shows), the intersection size, and every party's
number of identifiers. Nothing about an identifier outside the intersection: the lists that travel are
``H(x)`` raised to secret keys, indistinguishable from random elements without all keys, and no message
carries an identifier or a plain hash of one. Each party shuffles its list privately, so nobody learns
another party's row order either.

What the leader (``parties[0]``) learns besides, with three or more parties: for every jointly keyed value,
which parties hold it (as pseudonyms, not identifiers), hence the size of every partial intersection (e.g.
how many people bob and carol share that alice lacks). With two parties this is just the intersection size.

A coalition holds its members' keys: parties that see an honest party's list keyed by all keys but their
own can compare it with their own lists, so a coalition of everyone but one honest party learns the honest
party's intersection with each member's column (not only the full intersection).

What a malicious party could do (not prevented; the protocol is not secure against active attacks):

* choose its input: list identifiers it merely guesses and learn which of them the others hold (inherent
  to any PSI; ``max_ids`` bounds how many guesses per run, ``min_intersection`` refuses tiny probes);
* make the result wrong: skip or change its key on a list it forwards, drop or reorder elements, and a
  malicious leader can report any positions; the parties then train on misaligned or too few rows.
  Malformed elements, lists of the wrong length and out-of-range or repeated positions are refused with
  :class:`~mpdp.errors.InvalidGroupElementError` / :class:`~mpdp.errors.MalformedMessageError`; a
  consistent lie is not detected;
* a malicious leader learns no identifiers beyond the intersection (it sees only keyed values) but can
  reveal the partial-intersection pattern above to anyone.

The run's JSON (``mpdp run --id-column``, ``mpdp align``) reports ``aligned_rows`` (the intersection size)
and ``rows_per_party``: both are revealed by the protocol and should be considered public.
"""

from mpdp.protocols.alignment.ids import check_ids, normalise_id
from mpdp.protocols.alignment.psi import (
    DOMAIN,
    Alignment,
    AlignmentParty,
    AlignmentSpec,
    align,
    simulate_alignment,
)

__all__ = [
    "DOMAIN",
    "Alignment",
    "AlignmentParty",
    "AlignmentSpec",
    "align",
    "check_ids",
    "normalise_id",
    "simulate_alignment",
]
