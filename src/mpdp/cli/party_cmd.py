"""``mpdp party --config cfg.json``: run one party of a protocol or a learning algorithm in this process, over
gRPC with mTLS.

A configuration with ``"algorithm"`` (a deployable name of ``mpdp run --list``) runs that party of the learning
algorithm on its own data file: see :mod:`mpdp.deploy.party` for its keys. One with ``"protocol"`` runs a
low-level protocol:

One configuration file can serve every party (pick the local one with ``--name``)::

    {
      "protocol": "secure-sum",
      "parties": {"alice": "127.0.0.1:50051", "bob": "127.0.0.1:50052", "carol": "127.0.0.1:50053"},
      "certs": "certs/",                       # from `mpdp certs --out certs --parties alice bob carol`
      "inputs": {"alice": "alice.npy", "bob": {"synthetic": {"seed": 1, "shape": [1000]}}, ...},
      "params": {},                            # protocol parameters (see mpdp.protocols.catalog)
      "timeout": 120, "connect_timeout": 30,   # seconds
      "seed": 7                                # tests and reproducible demos only: seeds every party's randomness
    }

Instead of ``"certs"`` a party may give ``"tls": {"ca": ..., "cert": ..., "key": ...}``. Relative paths are
relative to the configuration file. The file is checked against its schema (:mod:`mpdp.deploy.config`: types,
ranges, required and unknown keys, the protocol's own parameters) before anything runs; a problem is one line
naming the party, the key and the fix. The party prints its result, traffic and timing (``--json``: one object) and
exits 0; on failure it prints one line naming the error type and the party at fault and exits 2.

Aggregation with ``"max_dropouts": k`` starts without clients that never come up, up to ``k`` clients: every
party waits ``connect_timeout`` for them, then runs with the others (the aggregate covers the clients present;
``absent`` in the report names the others); more absent clients, or any other party absent, is a
PartyUnavailableError naming them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mpdp.deploy.config import PartyConfig, load_party_config
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain
from mpdp.progress import SILENT, Progress
from mpdp.protocols.catalog import PartySetup, build_role, load_input, tolerated_absences
from mpdp.randomness import RandomSource
from mpdp.runtime.certs import credentials_from_config

__all__ = ["add_parser", "handle", "load_config", "to_jsonable"]


#: ``mpdp party --help``'s account of the configuration file (the module docstrings of this module and of
#: :mod:`mpdp.deploy.party` give the full one)
CONFIG_HELP = """\
The configuration file (JSON; relative paths are relative to the file) takes one of two forms.

A party of a learning algorithm ("algorithm": a name of `mpdp launch --list`):

  {
    "algorithm": "<a name of mpdp launch --list>",
    "parties": {"party0": "10.0.0.1:7001", "party1": "10.0.0.2:7001", "server": "10.0.0.3:7001"},
    "shared": "shared.json",        the section every party must hold identically (parameters, schema,
                                    who holds which columns and rows); `mpdp launch --keep DIR` writes one
    "certs": "certs/party0",        ca.pem, party0.pem, party0.key (`mpdp certs --split`)
    "data": "party0.csv",           this party's own file only
    "ledger": {"path": "party0.ledger.json", "epsilon": 1.0, "delta": 0.0},
    "output": "output",             the folder its report (party.json) goes to, and, at the party that
                                    receives the release, the model (model.json) `mpdp predict --model`
                                    reads; default "output" beside the file (--output DIR overrides)
    "timeout": 120, "connect_timeout": 30,
    "seed": 7                       tests and demos only: seeds every party's randomness
  }

  optional: "alignment" and "id_column" (align the parties' records privately first), "evaluation" (the
  held-out records a scoring party is handed).

A party of a low-level protocol ("protocol": inner-product, aggregation, secure-sum):

  {
    "protocol": "secure-sum",
    "parties": {"alice": "127.0.0.1:50051", "bob": "127.0.0.1:50052", "carol": "127.0.0.1:50053"},
    "certs": "certs/",              from `mpdp certs --out certs --parties alice bob carol`
    "inputs": {"alice": "alice.npy", "bob": {"synthetic": {"seed": 1, "shape": [1000]}}},
    "params": {},
    "timeout": 120, "connect_timeout": 30
  }

  "aggregation" with "max_dropouts": k starts without up to k clients that never come up (after waiting
  connect_timeout for them); its report names them under "absent".

Instead of "certs" a party may give "tls": {"ca": ..., "cert": ..., "key": ...}. One file can serve every
party: pick the local one with --name (or give "party": NAME in the file). Every party's file must name the
same parties at the same addresses.

More: docs/deployment.md (the Deployment page of the documentation site), `mpdp launch --keep DIR` for a
complete set of folders to copy to each organisation, and the docstrings of mpdp.cli.party_cmd and
mpdp.deploy.party.
"""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "party", help="run one party of a protocol or a learning algorithm over the network (gRPC, mutual TLS)",
        description="Run one party, in this process, of a learning algorithm or a low-level protocol, talking to "
                    "the other parties over gRPC with mutual TLS. It prints its result, traffic and timing (--json: "
                    "one object) and exits 0; on failure it names the error and the party at fault and exits 2.",
        epilog=CONFIG_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, metavar="CONFIG.json",
                        help="this party's JSON configuration (format below)")
    parser.add_argument("--name", default=None, help="the local party (default: the config's \"party\")")
    parser.add_argument("--json", action="store_true", help="print one JSON object, for an error too")
    parser.add_argument("--quiet", action="store_true", help="no phase lines on a terminal")
    parser.add_argument("--output", default=None, metavar="DIR",
                        help="an algorithm's party: the folder for its report (party.json) and, if it receives the "
                             "release, the model (model.json, for `mpdp predict --model DIR`); default the "
                             "configuration's \"output\" (\"output\" beside the file)")
    parser.add_argument("--result-file", default=None, help=argparse.SUPPRESS)  # the launcher's result file
    parser.set_defaults(handler=handle)


def to_jsonable(value: Any) -> Any:
    """A protocol result as JSON data: arrays become nested lists, big ints stay ints, bytes become hex."""
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, np.generic):
        return value.item()
    if type(value).__name__ == "mpz":
        return int(value)
    if hasattr(value, "to_wire"):
        return to_jsonable(value.to_wire())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value


def load_config(path: str | Path, name: str | None = None) -> PartyConfig:
    """Read and check a party configuration file against its schema (:mod:`mpdp.deploy.config`)."""
    return load_party_config(path, name)


def handle(args: argparse.Namespace) -> int:
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # gRPC's C core logs every failed handshake otherwise
    try:
        from mpdp.runtime.grpc_transport import GrpcTransport
        from mpdp.runtime.network_party import run_network_party
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ParameterError(explain("grpcio", "not installed", "the net extra", "pip install 'mpdp[net]'")) from exc
    # main's reporter (mpdp.cli.common.progress_of, not imported: a party starts without the other commands' imports)
    progress: Progress = getattr(args, "progress", SILENT)
    progress.phase(f"party: reading {args.config}")
    config = load_config(args.config, args.name)  # checked before anything runs
    name, base, values = config.name, config.base, config.values
    parties: dict[str, str] = values["parties"]
    if config.kind == "algorithm":
        from mpdp.deploy.party import run_algorithm_party

        report = run_algorithm_party(values, name, base, Path(args.output) if args.output else None,
                                     progress=progress,
                                     result_file=Path(args.result_file) if args.result_file else None)
        if args.json:
            print(json.dumps(report))
        else:
            comm = report["communication"]
            print(f"{name}: {report['algorithm']} finished in {report['protocol_seconds']:.2f} s "
                  f"(set-up {report['setup_seconds']:.2f} s, configuration digest {report['digest'][:12]})")
            print(f"  sent {comm['bytes_sent']} bytes in {comm['messages']} messages")
            if report["ledger"]:
                print(f"  ledger {report['ledger']['path']}: epsilon {report['ledger']['epsilon']:g} spent")
            if "metric" in report:
                print(f"  {report['metric']['name']} on its held-out records: {report['metric']['value']:.4f}")
            saved = report["saved"]
            if "model" in saved:
                print(f"  released model written to {saved['model']} (mpdp predict --model "
                      f"{Path(saved['model']).parent})")
            print(f"  report written to {saved['report']}")
        return 0
    data = load_input(values["inputs"].get(name), name, base=base)
    setup = PartySetup(party=name, parties=tuple(parties), params=values["params"], data=data)
    role = build_role(values["protocol"], setup)
    seed = values.get("seed")
    if seed is not None:
        import warnings

        warnings.warn(f"party {name} runs with a seeded random source (seed={seed}): for tests and demos only",
                      PrivacyLeakWarning, stacklevel=1)
    rng = (RandomSource.seeded(seed) if seed is not None else RandomSource.fresh()).spawn(name)
    transport = GrpcTransport(name, parties, credentials_from_config(values, name, base),
                              connect_timeout=values["connect_timeout"], send_timeout=values["timeout"])
    progress.phase(f"{name}: connecting to {', '.join(p for p in parties if p != name)} (up to "
                   f"{transport.connect_timeout:g} s) and running {values['protocol']}")
    optional, bound = tolerated_absences(values["protocol"], values["params"])
    optional.pop(name, None)
    result, traffic, seconds = run_network_party(transport, role, rng=rng, timeout=values["timeout"],
                                                 optional=optional if bound else None, max_absent=bound)
    report = {"party": name, "protocol": values["protocol"], "result": to_jsonable(result),
              "communication": traffic.as_dict(), "seconds": seconds, "absent": list(transport.absent)}
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{name}: {values['protocol']} finished in {seconds * 1000:.1f} ms")
        print(f"  sent {traffic.bytes_sent} bytes in {traffic.messages_sent} messages, {traffic.rounds} rounds")
        if transport.absent:
            print(f"  absent at start-up (the run went on without them): {', '.join(transport.absent)}")
        print(f"  result: {json.dumps(report['result'])[:400]}")
    return 0
