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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.errors import ParameterError, explain
from mpdp.numeric import as_array, positive_finite, real_array
from mpdp.protocols.toy_sum import secure_sum_role
from mpdp.randomness import RandomSource
from mpdp.runtime.comm import Comm

__all__ = ["PROTOCOLS", "NamedProtocol", "PartySetup", "build_role", "load_input"]

Role = Callable[[Comm], Any]


@dataclass(frozen=True)
class PartySetup:
    """What one party knows when it builds its role: who it is, who the others are, parameters, its input."""

    party: str
    parties: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    data: npt.NDArray[Any] | None = None

    def param(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        if key not in self.params:
            if required:
                raise ParameterError(explain(f"params.{key}", "missing", "a value", f"add \"{key}\" to params"))
            return default
        return self.params[key]

    def int_param(self, key: str, default: int | None = None, *, required: bool = False, low: int = 1) -> int:
        """``params[key]`` as an int >= ``low`` (ints only: "3", 3.5 or a list is a typed error naming the key)."""
        value = self.param(key, default, required=required)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ParameterError(explain(f"params.{key}", value, f"an int >= {low}",
                                         f"write e.g. \"{key}\": {max(low, 1)} (a number, not a string)"))
        return value

    def float_param(self, key: str, default: float) -> float:
        """``params[key]`` as a finite float > 0."""
        return positive_finite(self.param(key, default), f"params.{key}",
                               f"write e.g. \"{key}\": {default} (a number, not a string)")

    def names_param(self, key: str, *, required: bool = True) -> tuple[str, ...]:
        """``params[key]`` as a list of party names."""
        value = self.param(key, required=required)
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
            raise ParameterError(explain(f"params.{key}", value, "a list of party names",
                                         f"write e.g. \"{key}\": [\"alice\", \"bob\"]"))
        return tuple(value)

    def str_param(self, key: str, default: str | None = None, *, required: bool = False) -> str:
        """``params[key]`` as a non-empty str."""
        value = self.param(key, default, required=required)
        if not isinstance(value, str) or not value:
            raise ParameterError(explain(f"params.{key}", value, "a name (a non-empty string)",
                                         f"write e.g. \"{key}\": \"alice\""))
        return value

    def require_data(self) -> npt.NDArray[Any]:
        if self.data is None:
            raise ParameterError(explain(f"input of {self.party}", None, "an input array",
                                         f"add \"{self.party}\": \"file.npy\" (or a synthetic spec) to inputs"))
        return self.data


@dataclass(frozen=True)
class NamedProtocol:
    """A protocol a configuration can name: ``build(setup)`` returns the party's role."""

    name: str
    summary: str
    build: Callable[[PartySetup], Role]


def _aggregation(setup: PartySetup) -> Role:
    from mpdp.protocols.aggregation import (
        AggregationSpec,
        aggregation_aggregator,
        aggregation_client,
        aggregation_server,
    )

    server, aggregators = setup.str_param("server", required=True), setup.names_param("aggregators")
    clients = setup.param("clients", required=True)
    if not isinstance(clients, Mapping) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(
            v, bool) for k, v in clients.items()):
        raise ParameterError(explain("params.clients", clients, "{party: number of clients}",
                                     "write e.g. \"clients\": {\"carol\": 1}"))
    weighted = setup.param("weighted", False)
    if not isinstance(weighted, bool):
        raise ParameterError(explain("params.weighted", weighted, "true or false", "write \"weighted\": true"))
    timeout = setup.param("phase_timeout")
    spec = AggregationSpec(
        server=server,
        aggregators=aggregators,
        clients=dict(clients),
        dim=setup.int_param("dim", required=True),
        bound=setup.float_param("bound", 1.0),
        weighted=weighted,
        weight_bound=setup.float_param("weight_bound", 1.0),
        max_dropouts=setup.int_param("max_dropouts", 0, low=0),
        phase_timeout=None if timeout is None else setup.float_param("phase_timeout", 30.0),
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


def _inner_product(setup: PartySetup) -> Role:
    from mpdp.protocols.inner_product import (
        CkksBackend,
        CrossProductSpec,
        PaillierBackend,
        SharesBackend,
        cross_product,
    )

    kind = setup.str_param("backend", "shares")
    backend: Any
    if kind == "shares":
        backend = SharesBackend(dealer=setup.str_param("dealer", "dealer"))
    elif kind == "paillier":
        insecure = setup.param("insecure_for_tests", False)
        if not isinstance(insecure, bool):
            raise ParameterError(explain("params.insecure_for_tests", insecure, "true or false", "omit it"))
        randomizer: Any = setup.str_param("randomizer", "crt")  # PaillierBackend checks the name
        backend = PaillierBackend(key_bits=setup.int_param("key_bits", 2048), randomizer=randomizer,
                                  insecure_for_tests=insecure)
    elif kind == "ckks":
        backend = CkksBackend()
    else:
        raise ParameterError(explain("params.backend", kind, "'shares', 'paillier' or 'ckks'", "pick a backend"))
    reveal_to = setup.param("reveal_to")
    spec = CrossProductSpec(
        left=setup.str_param("left", required=True), right=setup.str_param("right", required=True),
        rows=setup.int_param("rows", required=True), left_cols=setup.int_param("left_cols", 1),
        right_cols=setup.int_param("right_cols", 1), backend=backend, bound=setup.float_param("bound", 1.0),
        reveal_to=None if reveal_to is None else setup.str_param("reveal_to"),
    )
    data = setup.require_data() if setup.party in (spec.left, spec.right) else None
    return lambda comm: cross_product(comm, data, spec)


def _alignment(setup: PartySetup) -> Role:
    from mpdp.protocols.alignment import AlignmentParty, AlignmentSpec

    ids = as_array(setup.require_data(), f"inputs.{setup.party}")
    if ids.ndim != 1 or ids.dtype.kind != "U":
        raise ParameterError(explain(f"input of {setup.party}", f"{ids.dtype} array of shape {ids.shape}",
                                     "a 1-D array of str ids", "save it with np.save(path, np.array(ids, dtype=str))"))
    spec = AlignmentSpec.from_config({"parties": list(setup.param("parties", setup.parties)),
                                      **{k: v for k, v in setup.params.items() if k != "parties"}})
    return AlignmentParty(setup.party, ids.tolist(), spec)


def _secure_sum(setup: PartySetup) -> Role:
    return secure_sum_role(setup.require_data(), party=setup.party)


PROTOCOLS: dict[str, NamedProtocol] = {
    p.name: p
    for p in (
        NamedProtocol("alignment", "private record alignment (ECDH PSI): each party learns its rows common to all, "
                      "in one order; input: a .npy of str ids; params: [parties (leader first), min_intersection, "
                      "case_sensitive, max_ids]", _alignment),
        NamedProtocol("secure-sum", "every party learns the sum of the parties' int64 vectors (toy)", _secure_sum),
        NamedProtocol("aggregation", "dropout-tolerant secure (weighted) sum of client vectors at a server; params: "
                      "server, aggregators, clients {party: k}, dim, bound[, weighted, weight_bound, max_dropouts]",
                      _aggregation),
        NamedProtocol("inner-product", "X^T Y between holders left and right (vectors or matrices); params: left, "
                      "right, rows[, left_cols, right_cols, bound, reveal_to, backend: shares|paillier|ckks, dealer]",
                      _inner_product),
    )
}


def build_role(protocol: str, setup: PartySetup) -> Role:
    """The role of ``setup.party`` in the named protocol."""
    spec = PROTOCOLS.get(protocol) if isinstance(protocol, str) else None
    if spec is None:
        raise ParameterError(explain("protocol", protocol, f"one of {sorted(PROTOCOLS)}", "name a known protocol"))
    return spec.build(setup)


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
    if isinstance(spec, Mapping) and set(spec) == {"synthetic"} and isinstance(spec["synthetic"], Mapping):
        s = spec["synthetic"]
        try:
            seed, shape = int(s["seed"]), tuple(int(d) for d in s["shape"])
            rng = RandomSource.seeded(seed).spawn(f"input/{party}")
            if s.get("kind", "integers") == "integers":
                return rng.integers(int(s.get("low", -1000)), int(s.get("high", 1000)), shape)
            low, high = float(s.get("low", -1.0)), float(s.get("high", 1.0))
            return low + (high - low) * rng.random(shape)
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(explain(f"synthetic input of {party}", dict(s),
                                         "{seed, shape[, kind: integers|uniform, low, high]}",
                                         "e.g. {\"seed\": 1, \"shape\": [100]}")) from exc
    raise ParameterError(explain(f"input of {party}", spec, "a .npy path or {\"synthetic\": {...}}",
                                 "see mpdp.protocols.catalog"))
