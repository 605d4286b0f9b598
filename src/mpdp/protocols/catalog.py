"""Protocols by name, for running one party per process (``mpdp party --config cfg.json``).

A deployment describes a protocol run in one JSON configuration shared by every party (see
:mod:`mpdp.cli.party_cmd`); each process builds its own role from it with :func:`build_role`, and a test or a
benchmark builds every role the same way to run them all in memory with :func:`~mpdp.runtime.run_protocol`.
Both therefore run the same code on the same inputs and, under the same seed, give identical results.

A party's input is either a ``.npy`` file (loaded without pickle) or a ``{"synthetic": {...}}`` spec drawn from
a seeded source, for demos and tests::

    "inputs": {"alice": "alice.npy",
               "bob": {"synthetic": {"seed": 1, "shape": [1000], "low": -100, "high": 100}}}
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import DomainError, ParameterError, explain
from mpdp.fields import Boolean, Either, Field, Integer, ListOf, MapOf, Null, Number, Schema, Text
from mpdp.numeric import as_array, real_array
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm

__all__ = ["PROTOCOLS", "NamedProtocol", "PartySetup", "build_role", "check_params", "load_input", "protocol_named"]

Role = Callable[[Comm], Any]

#: most values a synthetic input may hold
MAX_SYNTHETIC = 50_000_000
_BOUND = Either((Integer(low=-(2**62), high=2**62), Number(low=-1e300, high=1e300)))
#: a ``{"synthetic": {...}}`` input's keys
SYNTHETIC_INPUT = Schema({
    "seed": Field(Integer(low=0), required=True, example=1),
    "shape": Field(ListOf(Integer(low=0)), required=True, example=[100]),
    "kind": Field(Text(choices=("integers", "uniform")), default="integers", example="integers"),
    "low": Field(_BOUND, example=-100, help="default -1000 (integers) or -1.0 (uniform)"),
    "high": Field(_BOUND, example=100, help="default 1000 (integers) or 1.0 (uniform)"),
}, "a synthetic input")


@dataclass(frozen=True)
class PartySetup:
    """What one party knows when it builds its role: who it is, who the others are, parameters, its input.

    ``params`` are the protocol's parameters as its :attr:`NamedProtocol.params` schema checked them (defaults
    filled in): :func:`build_role` checks them before the role is built.
    """

    party: str
    parties: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    data: npt.NDArray[Any] | None = None

    def param(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        if self.params.get(key) is None:
            if required:
                raise ParameterError(explain(f"params.{key}", "missing", "a value", f"add \"{key}\" to params"))
            return default
        return self.params[key]

    def party_param(self, key: str, default: Any = None) -> Any:
        """A parameter naming one or more parties (a str, or a list or mapping of names): each must be a party."""
        value = self.param(key, default)
        names = [value] if isinstance(value, str) else list(value or ())
        unknown = [n for n in names if n not in self.parties]
        if unknown:
            raise ParameterError(explain(f"params.{key}", value, f"names among the parties {list(self.parties)}",
                                         f"name parties listed under \"parties\" (unknown: {unknown})"))
        return value

    def require_data(self) -> npt.NDArray[Any]:
        if self.data is None:
            raise ParameterError(explain(f"input of {self.party}", None, "an input array",
                                         f"add \"{self.party}\": \"file.npy\" (or a synthetic spec) to inputs"))
        return self.data


@dataclass(frozen=True)
class NamedProtocol:
    """A protocol a configuration can name: ``build(setup)`` returns the party's role; ``params`` is the schema of
    its parameters (types, ranges, defaults; unknown keys are refused)."""

    name: str
    summary: str
    build: Callable[[PartySetup], Role]
    params: Schema = field(default_factory=lambda: Schema({}, "its parameters"))
    #: parameters that name parties (a name, or a list or mapping of names)
    party_keys: tuple[str, ...] = ()


_POSITIVE = Number(low=0.0, low_open=True)
_PARTY = Text(describe="a party name")


def _aggregation(setup: PartySetup) -> Role:
    from mpdp.protocols.aggregation import (
        AggregationSpec,
        aggregation_aggregator,
        aggregation_client,
        aggregation_server,
    )

    spec = AggregationSpec(
        server=setup.party_param("server"), aggregators=tuple(setup.party_param("aggregators")),
        clients=dict(setup.party_param("clients")), dim=setup.param("dim"), bound=setup.param("bound"),
        weighted=setup.param("weighted"), weight_bound=setup.param("weight_bound"),
        max_dropouts=setup.param("max_dropouts"), phase_timeout=setup.param("phase_timeout"),
    )
    if setup.party == spec.server:
        return lambda comm: aggregation_server(comm, spec)
    if setup.party in spec.aggregators:
        return lambda comm: aggregation_aggregator(comm, spec)
    data = real_array(setup.require_data(), f"inputs.{setup.party}")
    if spec.weighted:  # the last column holds each client's weight
        data = data if data.ndim == 2 else data[None, :]
        return lambda comm: aggregation_client(comm, spec, data[:, :-1], data[:, -1])
    return lambda comm: aggregation_client(comm, spec, data)


_AGGREGATION = Schema({
    "server": Field(_PARTY, required=True, example="server"),
    "aggregators": Field(ListOf(_PARTY, min_len=2, unique=True), required=True, example=["server", "agg1"]),
    "clients": Field(MapOf(Integer(low=1), min_len=1), required=True, example={"alice": 1}),
    "dim": Field(Integer(low=1), required=True, example=16),
    "bound": Field(_POSITIVE, default=1.0, example=1.0),
    "weighted": Field(Boolean(), default=False, example=False),
    "weight_bound": Field(_POSITIVE, default=1.0, example=1.0),
    "max_dropouts": Field(Integer(low=0), default=0, example=0),
    "phase_timeout": Field(Either((Null(), _POSITIVE)), default=None, example=30),
}, "aggregation parameters")


def _inner_product(setup: PartySetup) -> Role:
    from mpdp.protocols.inner_product import (
        CkksBackend,
        CrossProductSpec,
        PaillierBackend,
        SharesBackend,
        cross_product,
    )

    kind = setup.param("backend")
    backend: Any
    if kind == "shares":
        backend = SharesBackend(dealer=setup.party_param("dealer"))
    elif kind == "paillier":
        backend = PaillierBackend(key_bits=setup.param("key_bits"), randomizer=setup.param("randomizer"),
                                  insecure_for_tests=setup.param("insecure_for_tests"))
    else:
        backend = CkksBackend()
    spec = CrossProductSpec(
        left=setup.party_param("left"), right=setup.party_param("right"), rows=setup.param("rows"),
        left_cols=setup.param("left_cols"), right_cols=setup.param("right_cols"), backend=backend,
        bound=setup.param("bound"), reveal_to=setup.party_param("reveal_to"),
    )
    data = setup.require_data() if setup.party in (spec.left, spec.right) else None
    return lambda comm: cross_product(comm, data, spec)


_INNER_PRODUCT = Schema({
    "left": Field(_PARTY, required=True, example="alice"),
    "right": Field(_PARTY, required=True, example="bob"),
    "rows": Field(Integer(low=1), required=True, example=100),
    "left_cols": Field(Integer(low=1), default=1, example=1),
    "right_cols": Field(Integer(low=1), default=1, example=1),
    "bound": Field(_POSITIVE, default=1.0, example=1.0),
    "reveal_to": Field(Either((Null(), _PARTY)), default=None, example="alice"),
    "backend": Field(Text(choices=("shares", "paillier", "ckks")), default="shares", example="shares"),
    "dealer": Field(_PARTY, default="dealer", example="dealer"),
    "key_bits": Field(Integer(low=512, high=16384), default=2048, example=2048),
    "randomizer": Field(Text(choices=("crt", "fixed-base")), default="crt", example="crt"),
    "insecure_for_tests": Field(Boolean(), default=False, example=False),
}, "inner-product parameters")


def _alignment(setup: PartySetup) -> Role:
    from mpdp.protocols.alignment import AlignmentParty, AlignmentSpec

    ids = as_array(setup.require_data(), f"inputs.{setup.party}")
    if ids.ndim != 1 or ids.dtype.kind != "U":
        raise ParameterError(explain(f"input of {setup.party}", f"{ids.dtype} array of shape {ids.shape}",
                                     "a 1-D array of str ids", "save it with np.save(path, np.array(ids, dtype=str))"))
    spec = AlignmentSpec(parties=tuple(setup.party_param("parties", list(setup.parties))),
                         min_intersection=setup.param("min_intersection"),
                         case_sensitive=setup.param("case_sensitive"), max_ids=setup.param("max_ids"))
    return AlignmentParty(setup.party, ids.tolist(), spec)


_ALIGNMENT = Schema({
    "parties": Field(ListOf(_PARTY, min_len=2, unique=True), default=None, example=["alice", "bob"],
                     help="the leader first; default every party"),
    "min_intersection": Field(Integer(low=1), default=100, example=100),
    "case_sensitive": Field(Boolean(), default=False, example=False),
    "max_ids": Field(Integer(low=1), default=50_000_000, example=1_000_000),
}, "alignment parameters")


def _secure_sum(setup: PartySetup) -> Role:
    return secure_sum_role(setup.require_data(), party=setup.party)


PROTOCOLS: dict[str, NamedProtocol] = {
    p.name: p
    for p in (
        NamedProtocol("alignment", "private record alignment (ECDH PSI): each party learns its rows common to all, "
                      "in one order; input: a .npy of str ids; params: [parties (leader first), min_intersection, "
                      "case_sensitive, max_ids]", _alignment, _ALIGNMENT, ("parties",)),
        NamedProtocol("secure-sum", "every party learns the sum of the parties' int64 vectors (toy)", _secure_sum),
        NamedProtocol("aggregation", "dropout-tolerant secure (weighted) sum of client vectors at a server; params: "
                      "server, aggregators, clients {party: k}, dim, bound[, weighted, weight_bound, max_dropouts]",
                      _aggregation, _AGGREGATION, ("server", "aggregators", "clients")),
        NamedProtocol("inner-product", "X^T Y between holders left and right (vectors or matrices); params: left, "
                      "right, rows[, left_cols, right_cols, bound, reveal_to, backend: shares|paillier|ckks, dealer]",
                      _inner_product, _INNER_PRODUCT, ("left", "right", "reveal_to", "dealer")),
    )
}


def protocol_named(protocol: Any) -> NamedProtocol:
    """The catalog entry of ``protocol`` (a name of :data:`PROTOCOLS`)."""
    spec = PROTOCOLS.get(protocol) if isinstance(protocol, str) else None
    if spec is None:
        raise ParameterError(explain("protocol", protocol, f"one of {sorted(PROTOCOLS)}", "name a known protocol"))
    return spec


def check_params(protocol: str, params: Any, where: str = "params",
                 parties: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``params`` checked against the protocol's schema (defaults filled in), and with ``parties`` every
    parameter naming a party against them; ParameterError names the key."""
    spec = protocol_named(protocol)
    checked = spec.params.check({} if params is None else params, where, "params")
    for key in spec.party_keys if parties is not None else ():
        if key == "dealer" and checked.get("backend") != "shares":
            continue
        value = checked.get(key)
        names = [value] if isinstance(value, str) else list(value or ())
        unknown = [n for n in names if n not in parties]  # type: ignore[operator]
        if unknown:
            raise ParameterError(explain(f"{where}: \"params.{key}\"", value, f"names among the parties "
                                         f"{list(parties or ())}", f"name parties listed under \"parties\" "
                                         f"(unknown: {unknown})"))
    return checked


def build_role(protocol: str, setup: PartySetup) -> Role:
    """The role of ``setup.party`` in the named protocol, its parameters checked against the protocol's schema."""
    spec = protocol_named(protocol)
    params = spec.params.check(dict(setup.params), f"{setup.party}'s protocol parameters", "params")
    return spec.build(dataclasses.replace(setup, params=params))


def load_input(spec: Any, party: str, *, base: Path | None = None) -> npt.NDArray[Any] | None:
    """A party's input array from a configuration entry (None, a .npy path or a synthetic spec)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        path = Path(spec)
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            array: npt.NDArray[Any] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ParameterError(explain(f"input of {party}", str(path), "a readable .npy file without objects",
                                         "save the array with numpy.save")) from exc
        return array
    if isinstance(spec, Mapping) and set(spec) == {"synthetic"}:
        s = SYNTHETIC_INPUT.check(spec["synthetic"], f"synthetic input of {party}", "synthetic")
        integers = s["kind"] == "integers"
        s.setdefault("low", -1000 if integers else -1.0)
        s.setdefault("high", 1000 if integers else 1.0)
        shape = tuple(s["shape"])
        if math.prod(shape) > MAX_SYNTHETIC:
            raise DomainError(explain(f"synthetic input of {party}: \"shape\"", list(shape),
                                      f"at most {MAX_SYNTHETIC:,} values", "draw a smaller input"))
        if not s["low"] < s["high"]:
            raise DomainError(explain(f"synthetic input of {party}: \"low\", \"high\"", [s["low"], s["high"]],
                                      "low < high", "e.g. \"low\": -100, \"high\": 100"))
        rng = RandomSource.seeded(s["seed"]).spawn(f"input/{party}")
        if integers:
            if not (isinstance(s["low"], int) and isinstance(s["high"], int)):
                raise ParameterError(explain(f"synthetic input of {party}: \"low\", \"high\"",
                                             [s["low"], s["high"]], "integers for kind \"integers\"",
                                             "e.g. \"low\": -100, \"high\": 100"))
            return rng.integers(s["low"], s["high"], shape)
        low, high = float(s["low"]), float(s["high"])
        return low + (high - low) * rng.random(shape)
    raise ParameterError(explain(f"input of {party}", spec, "a .npy path or {\"synthetic\": {...}}",
                                 "see mpdp.protocols.catalog"))
