"""The party roles of the vertical functional mechanism (paper 000, Algorithm 1 and Figure 1).

Roles
-----
* :class:`FMDataParty`: holds its own column block ``X^k`` (n x d_k) and its record identifiers; the label
  party also holds ``y``. It computes its single-party coefficients locally, its cross-party coefficients
  with each other party through a secure matrix product (shares only), adds the Laplace noise it owns
  (:mod:`mpdp.learning.functional_mechanism.noise`) and sends grid-exact noisy values to the server.
* :class:`FMServer`: honest but curious. It sends the public plan, checks the record counts, adds the
  parties' released units block by block, solves the noisy objective soundly and releases the model.

Messages (all through :class:`~mpdp.runtime.comm.Comm`, encoded by the strict codec)::

    parties -> server        "count"    n
    party k -> label party   "align"    sha256 of party k's record identifiers (label party aborts on mismatch)
    label party -> server    "aligned"  True
    server -> parties        "plan"     FMPlan.to_wire(), with n (sent only once counts and order agree)
    party k <-> party l      one secure product per pair (the backend's protocol; the server deals for shares)
    parties -> server        "release"  {block: grid units modulo 2^64 (uint64), noise included}
    server -> parties        "model"    the released weights

Security
--------
Semi-honest parties and server, no collusion between the server and a data party (the backends' own
assumptions apply to the secure products; with ``shares`` the server is the commodity dealer of the matrix
triples, which is why it must not collude with a holder). The server sees only noisy coefficients and, per block, each
party's noisy share, where one share of a cross-party coefficient is the backend's mask; it learns nothing
beyond the eps-DP release. No party learns an exact cross-party coefficient. Each party learns the public plan,
n, and the released model.

References
----------
Paper 000, Algorithm 1, sections "Dissecting objective function", "Collecting single-party and cross-party
coefficients", "Secure vector multiplication".
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.dp.sensitivities.functional_mechanism import Block
from mpdp.errors import MalformedMessageError, ParameterError, ShapeMismatchError, explain
from mpdp.learning.functional_mechanism.noise import (
    FMPlan,
    PartyNoise,
    add_noise,
    assemble_release,
    cross_units,
    cross_units_real,
    local_units,
)
from mpdp.learning.functional_mechanism.objective import (
    block_shape,
    check_features,
    check_labels,
    label_weights,
    quadratic_weight,
)
from mpdp.learning.functional_mechanism.release import FMResult, SolveSettings, solve_release
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime.comm import Comm
from mpdp.runtime.party import Party, run_protocol

__all__ = ["BACKENDS", "PEER_TIMEOUT", "SERVER", "FMDataParty", "FMServer", "PairProduct", "block_key",
           "pair_products", "party_cost", "party_name", "product_spec", "released_plan", "run_vertical_fm"]

FloatArray = npt.NDArray[np.float64]

#: Secure-product backends a run can select (mpdp.protocols).
BACKENDS: tuple[str, ...] = ("shares", "ckks", "paillier")
SERVER = "server"
#: seconds any single wait for a peer may take: a Paillier product over tens of thousands of records keeps the
#: peer waiting for minutes, well past the runtime's two-minute default
PEER_TIMEOUT = 3600.0


def party_name(k: int) -> str:
    return f"party{k}"


def block_key(block: Block) -> str:
    """A block's name on the wire: ``const``, ``lin/k``, ``quad/k/l``."""
    return "/".join(str(p) for p in block)


def released_plan(plan: FMPlan, records: int, backend: str) -> FMPlan:
    """The plan the server sends once every party has counted ``records`` rows: with the record count and, for
    the approximate ``ckks`` products, their documented error priced into the sensitivity (at most 16 fraction
    bits). Every party's guarantee is computed on it (:func:`party_cost`)."""
    out = dataclasses.replace(plan, records=int(records))
    if _check_backend(backend) == "ckks":
        from mpdp.protocols.inner_product.ckks_parameters import ckks_error_bound

        out = dataclasses.replace(out, coefficient_error=ckks_error_bound(int(records), 1.0), max_frac_bits=16)
    return out


def party_cost(plan: FMPlan, k: int) -> PrivacyCost:
    """What party ``k``'s own ledger is charged for a run of the released ``plan``: its guarantee ``eps^(k)``
    on its own columns (paper 000, Theorem 2), pure DP by the Laplace mechanism. Every engine charges it:
    the deployed party (its deployment's ``cost``), the in-memory report and the estimators' party ledgers."""
    return PrivacyCost(epsilon=plan.per_party_epsilon()[k], mechanism="laplace")


def _check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ParameterError(explain("backend", backend, f"one of {BACKENDS}", "choose a secure-product backend"))
    return backend


@dataclass(frozen=True)
class PairProduct:
    """One secure product per pair of parties: it yields every cross-party block the pair shares.

    With the label party in the pair it is the left holder and its matrix is ``[v | X^label]`` (``v = 1/2 - y``
    for logistic, ``y`` for linear regression), so one product gives both ``lin`` of the other party (row 0)
    and the quadratic block (the other rows); otherwise ``X^a^T X^b``. Fewer products than blocks: for K = 3,
    three products instead of five.
    """

    left: int
    right: int
    lin: Block | None  # ("lin", right) when the left holder is the label party
    quad: Block | None  # ("quad", min, max) when both hold columns
    left_cols: int

    def split(self, product: Any) -> dict[Block, Any]:
        """This holder's share of each block from its share of the product (left_cols x d_right)."""
        out: dict[Block, Any] = {}
        rows = 0
        if self.lin is not None:
            out[self.lin] = product[0]
            rows = 1
        if self.quad is not None:
            block = product[rows:]
            out[self.quad] = block if self.quad[1] == self.left else block.T  # type: ignore[misc]
        return out


def pair_products(plan: FMPlan) -> tuple[PairProduct, ...]:
    """The pairs' products in the canonical order every party (and the dealer) runs them in."""
    part, label = plan.partition, plan.partition.label_party
    out = []
    for a in range(part.parties):
        for b in range(a + 1, part.parties):
            left, right = (a, b) if label != b else (b, a)
            lin: Block | None = ("lin", right) if left == label and ("lin", right) in plan.groups else None
            quad: Block | None = ("quad", a, b) if ("quad", a, b) in plan.groups else None
            if lin is None and quad is None:
                continue
            cols = (1 if lin is not None else 0) + (len(part.columns[left]) if quad is not None else 0)
            out.append(PairProduct(left, right, lin, quad, cols))
    return tuple(out)


def product_spec(plan: FMPlan, pair: PairProduct, backend: str, options: Mapping[str, Any]) -> Any:
    """The public :class:`~mpdp.protocols.inner_product.CrossProductSpec` of a pair's product.

    Inputs are encoded with the plan's ``frac_bits`` and the result stays additively shared (no
    ``reveal_to``); with ``shares`` the server deals the matrix triple.
    """
    from mpdp.crypto.fixed_point import FixedPointFormat
    from mpdp.protocols.inner_product import CkksBackend, CrossProductSpec, PaillierBackend, SharesBackend

    chosen: Any
    if backend == "shares":
        chosen = SharesBackend(dealer=SERVER, **options)
    elif backend == "paillier":
        chosen = PaillierBackend(**options)
    else:
        chosen = CkksBackend(**options)
    return CrossProductSpec(left=party_name(pair.left), right=party_name(pair.right), rows=int(plan.records or 0),
                            left_cols=pair.left_cols, right_cols=len(plan.partition.columns[pair.right]),
                            backend=chosen, bound=1.0, fmt=FixedPointFormat(ring_bits=64, frac_bits=plan.frac_bits))


class FMDataParty(Party):
    """Party ``index`` of a vertical FM run: its columns, its identifiers and (label party) the labels.

    Parameters
    ----------
    name:
        The party's name in the protocol (``party_name(index)`` in :func:`run_vertical_fm`).
    index:
        Its position in the plan's partition.
    X:
        Its columns only, n x d_k, features in [-1, 1] with row L1 norm within the plan's public bound.
    y:
        The labels (label party only).
    ids:
        Record identifiers in the agreed order (default ``0..n-1``); parties whose identifiers differ abort.
    clip:
        Clip out-of-domain rows instead of refusing them (see
        :func:`~mpdp.learning.functional_mechanism.objective.check_features`).
    noise_rng:
        Root of this party's noise streams; default ``comm.rng.spawn("fm-noise")``.
    ledger:
        Charged with this party's own guarantee ``eps^(k)`` before it releases anything.
    """

    def __init__(self, name: str, index: int, X: npt.ArrayLike, y: npt.ArrayLike | None = None, *,
                 label_party: int = 0, ids: npt.ArrayLike | None = None, clip: bool = False, backend: str = "shares",
                 backend_options: Mapping[str, Any] | None = None, noise_rng: RandomSource | None = None,
                 ledger: BudgetSpender | None = None) -> None:
        super().__init__(name)
        self.index = int(index)
        self.label_party = int(label_party)
        self._X = np.asarray(X, dtype=np.float64)
        self._y = None if y is None else np.asarray(y, dtype=np.float64)
        n = self._X.shape[0] if self._X.ndim == 2 else -1
        self._ids = np.arange(max(n, 0), dtype=np.int64) if ids is None else np.asarray(ids)
        self.clip = clip
        self.backend = _check_backend(backend)
        self.backend_options = dict(backend_options or {})
        self._noise_rng = noise_rng
        self.ledger = ledger
        self.timings: dict[str, float] = {}  # seconds per phase of the last run (local, cross, noise)
        self._keys: Any = None
        self._key_rng: RandomSource | None = None

    def _digest(self) -> bytes:
        ids = np.ascontiguousarray(self._ids)
        return hashlib.sha256(str(ids.dtype).encode() + ids.tobytes()).digest()

    def run(self, comm: Comm) -> FloatArray:
        if self._X.ndim != 2 or self._X.shape[0] != self._ids.shape[0]:
            raise ShapeMismatchError(explain(f"X, ids of {self.name}", (self._X.shape, self._ids.shape),
                                             "(n, d_k) and (n,)", "one identifier per record"))
        comm.send(SERVER, int(self._X.shape[0]), label="count")
        self._check_alignment(comm)
        self._key_rng = comm.rng.spawn("paillier-key")
        plan = FMPlan.from_wire(comm.recv(SERVER, label="plan"))
        part, k = plan.partition, self.index
        label = part.label_party
        if not 0 <= k < part.parties or party_name(k) != self.name or label != self.label_party:
            raise ParameterError(explain("index", k, f"this party's position ({self.name})", "match the names"))
        Xk = check_features(self._X, (plan.party_l1 or ())[k], clip=self.clip, name=f"X of {self.name}")
        if Xk.shape[1] != len(part.columns[k]):
            raise ShapeMismatchError(explain(f"columns of {self.name}", Xk.shape[1], f"{len(part.columns[k])}",
                                             "hold exactly the columns the plan assigns"))
        y = np.zeros(0)
        if k == label:
            if self._y is None:
                raise ParameterError(explain(f"y of {self.name}", None, "the labels", "the label party holds y"))
            y = check_labels(plan.objective, self._y, clip=self.clip)
            if y.shape[0] != Xk.shape[0]:
                raise ShapeMismatchError(explain("y", y.shape, f"({Xk.shape[0]},)", "one label per record"))
        if self.ledger is not None:
            self.ledger.spend(party_cost(plan, k), label=f"fm-{plan.objective}/{self.name}")
        from mpdp.protocols.inner_product import cross_product

        q = quadratic_weight(plan.objective)
        t0 = time.perf_counter()
        Xk = plan.round_features(Xk)  # the grid the secure products encode on; local blocks use it too
        units: dict[Block, Any] = {}
        for block in plan.groups:
            if part.involved(block) != frozenset({k}):
                continue
            if block[0] == "const":
                y_r = plan.round_features(y)
                units[block] = local_units(plan, block, float(y_r @ y_r))
            elif block[0] == "lin":
                units[block] = local_units(plan, block, label_weights(plan.objective, plan.round_features(y)) @ Xk)
            else:
                units[block] = local_units(plan, block, q * (Xk.T @ Xk))
        t1 = time.perf_counter()
        for pair in pair_products(plan):
            if k not in (pair.left, pair.right):
                continue
            spec = product_spec(plan, pair, self.backend, self.backend_options)
            if k == pair.left:
                parts = [Xk] if pair.quad is not None else []
                if pair.lin is not None:  # v = 1/2 - y (exact on the grid) or the rounded y
                    v = 0.5 - y if plan.objective == "logistic" else plan.round_features(y)
                    parts.insert(0, v[:, None])
                mine = np.hstack(parts)
            else:
                mine = Xk
            keys = self._paillier_keys(spec) if k == pair.left else None
            out = cross_product(comm, mine, spec, keys=keys)
            if out is None or out.share is None:
                raise ParameterError(explain(f"product of parties {pair.left} and {pair.right}", None,
                                             "an additive share", "run the product without reveal_to"))
            real = bool(getattr(out, "real", False))  # CKKS: real-valued shares, not ring elements
            share = np.asarray(out.share).reshape(pair.left_cols, spec.right_cols)
            for block, part_share in pair.split(share).items():
                part_share = np.ascontiguousarray(part_share)
                units[block] = (cross_units_real(plan, block, part_share) if real
                                else cross_units(plan, block, part_share, out.scale_bits))
        t2 = time.perf_counter()
        noise = PartyNoise(plan, self._noise_rng if self._noise_rng is not None else comm.rng.spawn("fm-noise"))
        # 1-d on the wire (the codec carries 0-d arrays as plain ints); the server reshapes by the plan.
        release = {block_key(b): np.atleast_1d(add_noise(plan, k, b, u, noise)) for b, u in units.items()}
        self.timings = {"local": t1 - t0, "cross": t2 - t1, "noise": time.perf_counter() - t2}
        comm.send(SERVER, release, label="release")
        weights: FloatArray = np.asarray(comm.recv(SERVER, label="model"), dtype=np.float64)
        return weights

    def _paillier_keys(self, spec: Any) -> Any:
        """One Paillier key pair (or CKKS context) per party, generated the first time it is the key owner
        (left), then reused for its other products."""
        from mpdp.protocols.inner_product import CkksBackend, PaillierBackend

        if isinstance(spec.backend, CkksBackend):
            if self._keys is None:
                from mpdp.protocols.inner_product.ckks import new_context

                # the functional mechanism's products are all shared (never revealed to the key owner): they
                # need no rotation, so no Galois keys (18.6 MB of public context per key owner, 0.4 s)
                self._keys = new_context(galois_keys=spec.reveal_to == spec.left)
            return self._keys
        if not isinstance(spec.backend, PaillierBackend):
            return None
        if self._keys is None:
            from mpdp.crypto.paillier import generate_keypair

            self._keys = generate_keypair(spec.backend.key_bits, rng=self._key_rng,
                                          insecure_for_tests=spec.backend.insecure_for_tests)
        return self._keys

    def _check_alignment(self, comm: Comm) -> None:
        label = party_name(self.label_party)
        if self.name != label:
            comm.send(label, self._digest(), label="align")
            return
        mine = self._digest()
        for other in comm.peers:
            if other != SERVER and comm.recv(other, label="align") != mine:
                raise ShapeMismatchError(explain(f"record identifiers of {other}", "a different order or set",
                                                 f"the same records in the same order as {self.name}",
                                                 "align the parties' records by identifier before training"))
        comm.send(SERVER, True, label="aligned")


class FMServer(Party):
    """The honest-but-curious server: sends the plan, aggregates the noisy coefficients, solves, releases."""

    def __init__(self, plan: FMPlan, settings: SolveSettings | None = None, name: str = SERVER, *,
                 backend: str = "shares", backend_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(name)
        self.plan = plan
        self.settings = settings or SolveSettings()
        self.backend = _check_backend(backend)
        self.backend_options = dict(backend_options or {})

    def run(self, comm: Comm) -> FMResult:
        plan = self.plan
        names = [party_name(k) for k in range(plan.partition.parties)]
        t0 = time.perf_counter()
        counts = comm.gather(names, label="count")
        n0 = counts[names[0]]
        for name, n in counts.items():
            if n != n0:
                raise ShapeMismatchError(explain(f"record count of {name}", n, f"{n0} like {names[0]}",
                                                 "every party must hold the same records"))
        if comm.recv(party_name(plan.partition.label_party), label="aligned") is not True:
            raise ShapeMismatchError("the label party did not confirm the parties' record alignment")
        if plan.records is not None and n0 != plan.records:  # the parties were charged for the planned count
            raise ShapeMismatchError(explain("record count of the parties", n0, f"the {plan.records} records of "
                                             "the public plan", "give every party the planned records"))
        plan = released_plan(plan, int(n0), self.backend)
        comm.broadcast(plan.to_wire(), label="plan", to=names)
        if self.backend == "shares":  # the server is the commodity dealer of the Beaver matrix triples
            from mpdp.protocols.inner_product import cross_product

            for pair in pair_products(plan):
                cross_product(comm, None, product_spec(plan, pair, self.backend, self.backend_options))
        releases = comm.gather(names, label="release")
        t1 = time.perf_counter()
        totals: dict[Block, Any] = {}
        keys = {block_key(b): b for b in plan.groups}
        for name, release in releases.items():
            if not isinstance(release, dict) or not set(release) <= set(keys):
                raise ParameterError(explain(f"release of {name}", type(release).__name__,
                                             f"a mapping of planned blocks {sorted(keys)}", "send the plan's blocks"))
            for key, units in release.items():
                block = keys[key]
                arr = np.asarray(units)
                shape = block_shape(plan.partition, block)
                if arr.dtype != np.uint64 or arr.size != math.prod(shape) or arr.ndim != max(len(shape), 1):
                    raise MalformedMessageError(explain(f"{key} from {name}", (arr.dtype, arr.shape),
                                                        f"uint64 units of shape {block_shape(plan.partition, block)}",
                                                        "send the units add_noise returns"))
                arr = arr.reshape(shape)
                with np.errstate(over="ignore"):  # modulo 2^64, like the ring the shares live in
                    totals[block] = (totals.get(block, np.zeros(shape, dtype=np.uint64)) + arr).astype(np.uint64)
        missing = [block_key(b) for b in plan.groups if b not in totals]
        if missing:
            raise ParameterError(explain("released blocks", sorted(totals, key=str), f"also {missing}",
                                         "every planned block must be released"))
        noisy = assemble_release(plan, totals)
        solved = solve_release(plan, noisy, self.settings)
        comm.broadcast(solved.weights, label="model", to=names)
        t2 = time.perf_counter()
        return FMResult(solved.weights, plan, noisy, solved, plan.total_epsilon, plan.per_party_epsilon(),
                        phases={"collect": t1 - t0, "solve": t2 - t1})


def run_vertical_fm(plan: FMPlan, blocks: Sequence[npt.ArrayLike], y: npt.ArrayLike, *, backend: str = "shares",
                    clip: bool = False, settings: SolveSettings | None = None, rng: RandomSource | None = None,
                    noise_rng: RandomSource | None = None, ledger: BudgetSpender | None = None,
                    party_ledgers: Mapping[str, BudgetSpender] | None = None,
                    backend_options: Mapping[str, Any] | None = None,
                    ids: Sequence[npt.ArrayLike] | None = None, timeout: float = PEER_TIMEOUT) -> FMResult:
    """Run every party's role and the server over the in-memory transport (a simulation of a deployment).

    ``blocks[k]`` is party k's columns; ``y`` goes to the label party only. Before any party starts, ``ledger``
    (the analyst's) is charged the plan's cost on D and each of ``party_ledgers`` (keyed by party name) its
    party's :func:`party_cost`, all or nothing where the keepers can tell in advance. ``noise_rng`` (tests,
    Claim 1) hands every party the same noise root. ``timeout`` bounds any single wait for a peer
    (:data:`PEER_TIMEOUT`).
    """
    _check_backend(backend)
    K = plan.partition.parties
    if len(blocks) != K:
        raise ShapeMismatchError(explain("blocks", len(blocks), f"{K} column blocks", "one block per party"))
    names = [party_name(k) for k in range(K)]
    unknown = sorted(set(party_ledgers or {}) - set(names))
    if unknown:
        raise ParameterError(explain("party_ledgers", unknown, f"names among {names}", "key them by party"))
    charges: list[tuple[BudgetSpender, PrivacyCost, str]] = []
    if ledger is not None:
        charges += [(ledger, cost, f"fm-{plan.objective}") for cost in plan.costs()]
    if party_ledgers:
        released = released_plan(plan, len(np.asarray(blocks[0])), backend)
        charges += [(spender, party_cost(released, names.index(name)), f"fm-{plan.objective}/{name}")
                    for name, spender in party_ledgers.items()]
    for spender, cost, label in charges:  # a refusal before anything is recorded, where the keeper can tell
        can_afford = getattr(spender, "can_afford", None)
        if callable(can_afford) and not can_afford(cost):
            spender.spend(cost, label=label)  # raises BudgetExceededError with the keeper's own message
    for spender, cost, label in charges:
        spender.spend(cost, label=label)
    root = resolve(rng)
    roles: dict[str, Any] = {}
    for k in range(K):
        roles[party_name(k)] = FMDataParty(
            party_name(k), k, blocks[k], y if k == plan.partition.label_party else None,
            label_party=plan.partition.label_party, ids=None if ids is None else ids[k], clip=clip,
            backend=backend, backend_options=backend_options,
            noise_rng=noise_rng)
    roles[SERVER] = FMServer(plan, settings, backend=backend, backend_options=backend_options)
    start = time.perf_counter()
    run = run_protocol(roles, rng=root, timeout=timeout)
    result: FMResult = run.results[SERVER]
    result.communication = run.communication()
    result.phases["total"] = time.perf_counter() - start
    for phase in ("local", "cross", "noise"):  # the slowest party sets the pace of each phase
        result.phases[phase] = max(role.timings.get(phase, 0.0) for name, role in roles.items() if name != SERVER)
    return result
