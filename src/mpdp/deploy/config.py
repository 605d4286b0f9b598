"""The schema of a party configuration file (``mpdp party --config cfg.json``), checked before anything runs.

One file describes one party's part in a deployment: the envelope every party has (``parties``, TLS files,
timeouts, seed) and either a low-level ``"protocol"`` (its ``params`` checked against that protocol's own schema
in :mod:`mpdp.protocols.catalog`, its ``inputs``) or a learning ``"algorithm"`` (its ``shared`` section, its own
data file, ledger and alignment; see :mod:`mpdp.deploy.party`). :func:`load_party_config` reads the file and
:func:`check_party_config` checks a parsed one: types, ranges, required keys and unknown keys, each problem a
:class:`~mpdp.errors.ParameterError` (:class:`~mpdp.errors.DomainError` for a value out of range) naming the
party, the key and the fix, the same error ``mpdp party`` prints as one line.

Algorithm options live in the shared section's public parameters; :func:`check_algorithm_options` is the one
place a party checks them before it connects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpdp.errors import ParameterError, explain
from mpdp.fields import Anything, Boolean, Custom, Either, Field, Integer, ListOf, MapOf, Null, Number, Schema, Text
from mpdp.protocols.catalog import PROTOCOLS, SYNTHETIC_INPUT, check_params
from mpdp.runtime.certs import check_party_name

__all__ = ["ALGORITHM_CONFIG", "PROTOCOL_CONFIG", "SHARED", "PartyConfig", "check_algorithm_options",
           "check_party_config", "load_party_config", "party_address"]

#: longest timeout a configuration may set (seconds; a typo such as 1e9 is refused rather than waited for)
MAX_TIMEOUT = 7 * 24 * 3600.0


def party_address(address: str) -> str | None:
    """Why ``address`` is not a ``host:port`` to listen on or dial (None when it is one)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return "\"host:port\" with a port in 1..65535, e.g. \"127.0.0.1:50051\""
    return None


def _party_name(name: str) -> str | None:
    try:
        check_party_name(name)
    except ParameterError:
        return "letters, digits and inner hyphens, at most 63 characters (it becomes a certificate DNS name)"
    return None


_PATH = Text(describe="a file path")
_NAME = Custom(Text(describe="a party name"), _party_name)
_PARTIES = MapOf(Custom(Text(describe="a \"host:port\" address"), party_address), key=_NAME, min_len=2)
_TLS_FILES = Schema({k: Field(_PATH, required=True, example=f"certs/alice.{'pem' if k != 'key' else 'key'}")
                     for k in ("ca", "cert", "key")}, "TLS files {ca, cert, key}")
_SECONDS = Number(low=0.0, low_open=True, high=MAX_TIMEOUT)
_LEDGER = Schema({
    "path": Field(_PATH, required=True, example="ledger.json"),
    "epsilon": Field(Number(low=0.0, low_open=True), required=True, example=1.0),
    "delta": Field(Custom(Number(low=0.0), lambda d: None if d < 1 else "a number in [0, 1)"), default=0.0,
                   example=0.0),
    "key": Field(_PATH, default=None, example="mpdp-integrity.key",
                 help="the organisation's integrity key file; default beside the ledger"),
}, "a ledger {path, epsilon[, delta, key]}")

#: keys every party configuration may hold
COMMON: dict[str, Field] = {
    "parties": Field(_PARTIES, required=True, example={"alice": "127.0.0.1:50051", "bob": "127.0.0.1:50052"},
                     help="every party's name and address, in the protocol's order"),
    "party": Field(_NAME, example="alice", help="the local party, unless --name is given"),
    "certs": Field(_PATH, example="certs/", help="a folder written by `mpdp certs`"),
    "tls": Field(Either((_TLS_FILES, MapOf(_TLS_FILES, key=_NAME))), example={"ca": "ca.pem", "cert": "a.pem",
                                                                               "key": "a.key"}),
    "timeout": Field(_SECONDS, default=120.0, example=120, help="seconds a party waits for a message"),
    "connect_timeout": Field(_SECONDS, default=30.0, example=30, help="seconds a party waits for the others"),
    "seed": Field(Either((Null(), Integer(low=0, high=2**63 - 1))), default=None, example=7,
                  help="tests and demos only"),
}
_INPUT = Either((Null(), _PATH, Schema({"synthetic": Field(SYNTHETIC_INPUT, required=True)}, "a synthetic input")))

#: a party of a low-level protocol (:data:`mpdp.protocols.catalog.PROTOCOLS`)
PROTOCOL_CONFIG = Schema({
    **COMMON,
    "protocol": Field(Text(choices=tuple(PROTOCOLS)), required=True, example="secure-sum"),
    "inputs": Field(MapOf(_INPUT, key=_NAME), default={}, example={"alice": "alice.npy"}),
    "params": Field(MapOf(Anything()), default={}, example={},
                    help="checked by the protocol's own schema (mpdp.protocols.catalog)"),
}, "a protocol party configuration")

#: a party of a learning algorithm (:mod:`mpdp.deploy.party`)
ALGORITHM_CONFIG = Schema({
    **COMMON,
    "algorithm": Field(Text(describe="a deployable algorithm name"), required=True,
                       example="<a name of mpdp launch --list>"),
    "shared": Field(Either((_PATH, MapOf(Anything()))), required=True,
                    example="shared.json", help="the section every party shares, as `mpdp launch --keep` writes it"),
    "data": Field(Either((_PATH, MapOf(_PATH, key=_NAME))), example="data.csv"),
    "ledger": Field(Either((Null(), _LEDGER, MapOf(_LEDGER, key=_NAME))), example={"path": "ledger.json",
                                                                                      "epsilon": 1.0}),
    "evaluation": Field(_PATH, example="evaluation.csv"),
    "alignment": Field(Schema({
        "parties": Field(ListOf(_NAME, min_len=2, unique=True), required=True, example=["alice", "bob"]),
        "min_intersection": Field(Integer(low=1), default=100, example=100),
        "case_sensitive": Field(Boolean(), default=False, example=False),
        "max_ids": Field(Integer(low=1), default=50_000_000, example=1_000_000),
    }, "an alignment"), example={"parties": ["alice", "bob"]}),
    "id_column": Field(Text(describe="a column name"), example="id"),
    "output": Field(_PATH, default="output", example="output",
                    help="the folder it writes its report (party.json) and, if it receives the release, the model "
                         "(model.json, read by `mpdp predict`) into; relative to the file"),
    "run": Field(Text(pattern=r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", describe="a run id (letters, digits, '.', "
                      "'_', '-'; at most 128)"), example="2024-05-01-fm",
                 help="what the parties' ledgers key this run's spend by; the same at every party"),
}, "an algorithm party configuration")


@dataclass(frozen=True)
class PartyConfig:
    """A checked party configuration: its values (defaults filled in), the local party, the folder relative paths
    start from, and the file it came from."""

    values: dict[str, Any]
    name: str
    base: Path
    path: Path | None = None

    @property
    def kind(self) -> str:
        """``"algorithm"`` or ``"protocol"``."""
        return "algorithm" if "algorithm" in self.values else "protocol"


def _where(name: str | None, path: Path | None) -> str:
    who = f"{name}'s configuration" if name else "the party configuration"
    return f"{who} {path}" if path is not None else who


def check_party_config(config: Any, name: str | None, *, base: Path, path: Path | None = None) -> PartyConfig:
    """``config`` checked against its schema; ``name`` (or its ``"party"``) must be one of its parties."""
    where = _where(name, path)
    if not isinstance(config, Mapping):
        raise ParameterError(explain(where, type(config).__name__, "a JSON object",
                                     "see the example in `mpdp party --help` and mpdp.deploy.party"))
    if ("algorithm" in config) == ("protocol" in config):
        received = "both \"algorithm\" and \"protocol\"" if "algorithm" in config else \
            "neither \"algorithm\" nor \"protocol\""
        raise ParameterError(explain(where, received, "exactly one of them",
                                     "name the learning algorithm or the protocol this party runs"))
    if name is None and isinstance(config.get("party"), str):
        name = config["party"]
        where = _where(name, path)
    schema = ALGORITHM_CONFIG if "algorithm" in config else PROTOCOL_CONFIG
    values = schema.check(config, where)
    parties = values["parties"]
    if name is None:
        raise ParameterError(explain(f"{where}: the local party", None, f"one of {list(parties)}",
                                     "pass --name NAME or add \"party\": NAME"))
    if name not in parties:
        raise ParameterError(explain(f"{where}: party name", name, f"one of {list(parties)}", "pass --name NAME"))
    if "certs" not in values and "tls" not in values:
        raise ParameterError(explain(f"{where}: TLS credentials", "no \"certs\" or \"tls\"", "one of them",
                                     "run `mpdp certs --out certs --parties ... --split` and add \"certs\": DIR"))
    if schema is PROTOCOL_CONFIG:
        values["params"] = check_params(values["protocol"], config.get("params"), where, tuple(parties))
        unknown = sorted(set(values["inputs"]) - set(parties))
        if unknown:
            raise ParameterError(explain(f"{where}: \"inputs\"", unknown, f"names among {list(parties)}",
                                         "key each input by its party's name"))
    else:
        from mpdp.deploy.deployments import deployment_for

        try:
            deployment_for(values["algorithm"])
        except ParameterError as exc:
            raise ParameterError(f"{where}: {exc}") from None
    return PartyConfig(values, name, base, path)


def load_party_config(path: str | Path, name: str | None = None) -> PartyConfig:
    """Read and check the party configuration file at ``path`` (relative paths in it start from its folder)."""
    file = Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ParameterError(explain("--config", str(path), "a readable UTF-8 JSON file",
                                     f"check the path ({type(exc).__name__}: {exc})")) from exc
    try:
        config = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise ParameterError(explain("--config", str(path), "a JSON object",
                                     f"fix the JSON ({type(exc).__name__}: {exc})")) from exc
    return check_party_config(config, name, base=file.resolve().parent, path=file)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_HOLDING = Either((Null(), Schema({
    "features": Field(ListOf(Text()), required=True, example=["age"]),
    "label": Field(Boolean(), required=True, example=True),
    "values": Field(Boolean(), required=True, example=False),
    "rows": Field(Either((Null(), Integer(low=0))), required=True, example=100),
}, "a holding {features, label, values, rows}")))

#: the deployment's own keys of a shared section (the algorithm's public parameters sit beside them)
SHARED = Schema({
    "holdings": Field(MapOf(_HOLDING, key=_NAME, min_len=1), required=True,
                      example={"alice": {"features": ["age"], "label": True, "values": False, "rows": 100}}),
    "rng_path": Field(ListOf(Text()), default=[], example=["algorithm"]),
    "schema": Field(MapOf(Anything()), example={}),
    "evaluation": Field(MapOf(Anything(), key=_NAME), example={}),
    "alignment": Field(MapOf(Anything()), example={"parties": ["alice", "bob"]}),
}, "a shared section", open=True)


def check_algorithm_options(algorithm: str, public: Any, where: str) -> dict[str, Any]:
    """The one place a deployed party checks its algorithm's options, before it connects to anyone; returns the
    shared section checked.

    ``public`` is the shared section: the algorithm's public parameters (budget, options, schema) beside the
    deployment's own keys (:data:`SHARED`: ``holdings``, ``rng_path``, ``evaluation``, ``alignment``). The
    deployment's keys are checked against :data:`SHARED`; the algorithm's options (``"settings"``) by its spec's
    schema (:meth:`~mpdp.learning.spec.options.Settings.from_public`: the same typed errors as ``--option``); the
    rest of its parameters by reading them as the party will
    (:meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.cost` for every holder), a missing or mistyped one
    refused as a ParameterError naming the section.
    """
    section = SHARED.check(public, f"{where}: the shared section")
    from mpdp.deploy.deployments import deployment_for
    from mpdp.learning.registry import get_algorithm

    spec = get_algorithm(algorithm)
    if "settings" not in section:
        raise ParameterError(explain(f"{where}: the shared section of {algorithm}", sorted(section),
                                     "its options under \"settings\"", "use the shared.json `mpdp launch --keep` "
                                     "writes for this algorithm"))
    spec.settings.from_public(section["settings"], source=f"{where}: shared settings of {algorithm}")
    deployment = deployment_for(algorithm)
    for party in section["holdings"]:
        try:
            deployment.cost(section, party)
        except ParameterError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise ParameterError(explain(f"{where}: the shared section of {algorithm}",
                                         f"{type(exc).__name__}: {exc}", "the parameters the algorithm reads",
                                         "use the shared.json `mpdp launch --keep` writes for this algorithm")) \
                from exc
    return section
