"""One party of a learning algorithm in its own process: ``mpdp party --config cfg.json --name NAME``.

The configuration of one organisation's party (JSON; relative paths are relative to the file)::

    {
      "algorithm": "<name>",                           # a deployable registered name (mpdp launch --list)
      "parties": {"party0": "10.0.0.1:7001", "party1": "10.0.0.2:7001", "server": "10.0.0.3:7001"},
      "shared": "shared.json",                         # or inline: parameters, schema, who holds what
      "certs": "certs/party0",                         # ca.pem, party0.pem, party0.key (no CA key)
      "data": "party0.csv",                            # this party's own file only
      "ledger": {"path": "party0.ledger.json", "epsilon": 1.0, "delta": 0.0},
      "timeout": 120, "connect_timeout": 30,
      "run": "2024-05-01-fm",                           # optional: the run's id, the same at every party
      "output": "output",                               # where it writes what it received (default beside the file)
      "seed": 7                                         # tests and demos only
    }

The file is checked against :data:`mpdp.deploy.config.ALGORITHM_CONFIG` and the shared section by
:func:`mpdp.deploy.config.check_algorithm_options` before the party connects.

A file listing every party's data (``"data": {"party0": ..., "party1": ...}``) also works: a party opens only
the entry under its own name. The ``shared`` section (with the algorithm, the party list and the seed) must be
identical at every party: the parties compare it at start-up (:class:`~mpdp.deploy.session.PartySession`).
``shared.holdings`` says, per party, which features it holds, whether it holds the label and how many rows.

Files not aligned yet: with ``"alignment": {"parties": [...], "min_intersection": ...}`` (an
:class:`~mpdp.protocols.alignment.AlignmentSpec`, in every party's file or in ``shared``; it is part of the
compared section) and ``"id_column": NAME``, each listed data party's file starts with the column
``id:NAME``; after the start-up check those parties run :func:`~mpdp.protocols.alignment.align` among
themselves over the same connections (random source ``seeded(seed).spawn("alignment").spawn(party)`` when
seeded, as ``mpdp run --data`` draws it), keep their aligned rows (``holdings.rows`` of them) and train on
those. The report then carries ``aligned_rows``, ``rows_per_party`` and the alignment's own traffic.

Held-out records: where the algorithm has parties score themselves (paper 004's evaluated agents), the shared
section's ``"evaluation"`` pins, per such party, the records' columns, count and sha256, and the party's file
names them (``"evaluation": "evaluation.csv"``); a file with other records is a ConfigMismatchError.

What a run leaves behind: every party writes its report to ``output/party.json`` (``output`` is the configuration's
``"output"`` folder, default ``output`` beside the file, or ``mpdp party --output DIR``). The party that receives the
release (:meth:`~mpdp.learning.spec.deployment.AlgorithmDeployment.receiver`: FM's server, the party that ends
with paper 003's or OFPA's parameters, DPVI's first data party, PFDS's first agent) also writes the released
model to ``output/model.json`` in the format of ``mpdp run --save`` (sealed with the organisation's integrity key
beside the folder), so ``mpdp predict --model output`` reads it; a party that scores itself on held-out records
reports its metric. The report (text and ``--json``) says where each file went.

The party's own ledger (created on first use with the given budget; its integrity key beside it, or the file
the ledger entry's ``"key"`` names) is charged what the algorithm releases about its data
(:mod:`mpdp.deploy.charge`): checked before connecting (a charge the budget cannot cover fails with
BudgetExceededError and the party tells the others it failed, so no message of the protocol is ever sent),
reserved under the run's id once the handshake has authenticated every peer and compared every configuration,
committed once a protocol message has left the party, and cancelled if the run ends before that.
"""

from __future__ import annotations

import contextlib
import json
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mpdp.datasets.holdings import PartyData, read_party_data, records_digest
from mpdp.deploy.charge import RunCharge, charge_run
from mpdp.deploy.config import check_algorithm_options, check_party_config
from mpdp.deploy.deployments import deployment_for
from mpdp.deploy.session import PartySession, digest
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import (
    AuthenticationError,
    ConfigMismatchError,
    ParameterError,
    PartyUnavailableError,
    PrivacyLeakWarning,
    ShapeMismatchError,
    explain,
)
from mpdp.files import write_atomic
from mpdp.learning.spec.deployment import AlgorithmDeployment, PartyContext
from mpdp.learning.spec.memory import decode_runs, encode_runs
from mpdp.progress import SILENT, Progress
from mpdp.protocols.alignment import Alignment, AlignmentSpec, align
from mpdp.randomness import RandomSource
from mpdp.runtime.certs import credentials_from_config
from mpdp.runtime.codec import decode, encode
from mpdp.runtime.steps import RunRecord

__all__ = ["PARTY_REPORT", "alignment_spec", "load_shared", "output_folder", "protocol_root", "run_algorithm_party",
           "shared_section", "write_outputs"]

#: the party's report in its output folder
PARTY_REPORT = "party.json"


def load_shared(config: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """The ``shared`` section, inline or from its file."""
    shared = config.get("shared")
    if isinstance(shared, str):
        try:
            shared = json.loads((base / shared).read_text())
        except (OSError, ValueError) as exc:
            raise ParameterError(explain("shared", str(base / shared), "a readable JSON file",
                                         "point \"shared\" at the file every party was given")) from exc
    if not isinstance(shared, dict) or "holdings" not in shared:
        raise ParameterError(explain("shared", type(shared).__name__, "an object with the algorithm's parameters "
                                     "and \"holdings\"", "use the shared.json `mpdp launch --keep` writes"))
    return shared


def alignment_spec(config: Mapping[str, Any], shared: Mapping[str, Any]) -> AlignmentSpec | None:
    """The agreed record alignment (``"alignment"`` in the shared section or the party's configuration)."""
    entry = config.get("alignment", shared.get("alignment"))
    return None if entry is None else AlignmentSpec.from_config(entry)


def shared_section(config: Mapping[str, Any], shared: Mapping[str, Any]) -> dict[str, Any]:
    """What every party must agree on: algorithm, parties and their addresses, parameters, seed, alignment, and
    the run's id when the configuration names one."""
    spec = alignment_spec(config, shared)
    return {"algorithm": config["algorithm"], "parties": dict(config["parties"]), "shared": dict(shared),
            "seed": config.get("seed"), "rng_path": list(shared.get("rng_path", [])),
            "alignment": None if spec is None else spec.to_config(), "run": config.get("run")}




def protocol_root(seed: int | None, path: list[str] | tuple[str, ...]) -> RandomSource:
    """The root of the parties' protocol random sources: ``seeded(seed).spawn(path...)``, or fresh entropy."""
    root = RandomSource.seeded(int(seed)) if seed is not None else RandomSource.fresh()
    for label in path:
        root = root.spawn(str(label))
    return root


def _own_data(config: Mapping[str, Any], name: str, base: Path, shared: Mapping[str, Any],
              aligned: bool = False) -> PartyData | None:
    holding = shared["holdings"].get(name)
    if holding is None:
        return None
    source = config.get("data")
    if isinstance(source, Mapping):
        source = source.get(name)
    if not isinstance(source, str):
        raise ParameterError(explain(f"data of {name}", source, "the path of its own CSV file",
                                     f"add \"data\": \"{name}.csv\" to {name}'s configuration"))
    id_column = config.get("id_column") if aligned else None
    if aligned and not isinstance(id_column, str):
        raise ParameterError(explain(f"id_column of {name}", id_column, "the name of its file's id column",
                                     f"add \"id_column\": \"id\" to {name}'s configuration"))
    return read_party_data(base / source, name, shared["schema"], features=holding["features"],
                           label=bool(holding["label"]), values=bool(holding["values"]),
                           rows=None if aligned else holding["rows"], id_column=id_column)


def _evaluation_data(config: Mapping[str, Any], name: str, base: Path,
                     shared: Mapping[str, Any]) -> PartyData | None:
    """The held-out records this party scores itself on, if the shared section pins some for it."""
    pinned = (shared.get("evaluation") or {}).get(name)
    if pinned is None:
        return None
    source = config.get("evaluation")
    if not isinstance(source, str):
        raise ParameterError(explain(f"evaluation of {name}", source, "the path of its held-out records' CSV",
                                     f"add \"evaluation\": \"evaluation.csv\" to {name}'s configuration"))
    data = read_party_data(base / source, name, shared["schema"], features=pinned["features"],
                           label=bool(pinned["label"]), values=bool(pinned["values"]), rows=int(pinned["rows"]))
    if records_digest(data) != pinned["sha256"]:
        raise ConfigMismatchError(explain(f"held-out records of {name} ({base / source})",
                                          f"sha256 {records_digest(data)[:12]}",
                                          f"the agreed records, sha256 {str(pinned['sha256'])[:12]}",
                                          "give every scoring party the analyst's same evaluation file"))
    return data


def _align(session: PartySession, data: PartyData | None, spec: AlignmentSpec, seed: int | None,
           holding: Mapping[str, Any] | None, progress: Progress = SILENT) -> tuple[PartyData | None, Alignment]:
    """Run the alignment with the other data parties and keep this party's aligned rows, in the agreed order."""
    if data is None or data.ids is None:
        raise ParameterError(explain(f"data of {session.name}", None, "its own file with an id column",
                                     "give every aligning party \"data\" and \"id_column\""))
    ids = data.ids
    result: Alignment = session.run(lambda comm: align(comm, ids, spec, progress=progress),
                                    protocol_root(seed, ["alignment"]),
                                    spec.parties, counted=False)
    kept = data.take(result.rows)
    if holding is not None and holding.get("rows") is not None and kept.n != int(holding["rows"]):
        raise ShapeMismatchError(explain(f"aligned rows of {session.name}", kept.n,
                                         f"{holding['rows']} (the shared holdings' count)",
                                         "give every party the same files the shared configuration was made for"))
    return kept, result


def _ledger(config: Mapping[str, Any], name: str, base: Path) -> PrivacyLedger | None:
    spec = config.get("ledger")
    if isinstance(spec, Mapping) and name in spec and isinstance(spec[name], Mapping):
        spec = spec[name]
    if spec is None or (isinstance(spec, Mapping) and "path" not in spec):
        return None  # a per-party table without this party: it keeps no ledger here
    key = spec.get("key")
    return PrivacyLedger.open_or_create(base / str(spec["path"]), epsilon=float(spec["epsilon"]),
                                        delta=float(spec.get("delta", 0.0)), method="basic", subject=f"party:{name}",
                                        key=None if key is None else base / str(key))


def output_folder(config: Mapping[str, Any], base: Path, output: Path | None = None) -> Path:
    """Where the party writes its report and what it received: ``output`` (``mpdp party --output``), else the
    configuration's ``"output"`` relative to its folder (default ``output``)."""
    if output is not None:
        return output.expanduser()
    return base / str(config.get("output") or "output")


def write_outputs(deployment: AlgorithmDeployment, algorithm: str, name: str, shared: Mapping[str, Any],
                  runs: list[RunRecord], folder: Path, report: dict[str, Any]) -> dict[str, str]:
    """Write what the party holds after the run into ``folder``: the released model if it received it
    (``model.json``, :func:`~mpdp.learning.release.build.deployed_model`) and its report (``party.json``), with
    its metric if it scored itself; the paths go into ``report["saved"]``. ``runs`` cross the wire form first,
    so the deployment reads them as the launcher's report does."""
    records = decode_runs(deployment, name, decode(encode(encode_runs(deployment, name, runs))), shared)
    metric = deployment.party_metric(name, shared, records)
    if metric is not None:
        report["metric"] = {"name": metric.name, "value": metric.value}
    saved: dict[str, str] = {}
    release = deployment.release(name, shared, records)
    folder.mkdir(parents=True, exist_ok=True)
    if release is not None:
        from mpdp.learning.release.build import deployed_model
        from mpdp.learning.release.format import write_model

        summary = {"algorithm": algorithm, "dataset": shared["schema"]["name"], "engine": "deployed",
                   "party": name, "run": report["run"], "parties": sorted(shared["holdings"])}
        saved["model"] = str(write_model(folder, deployed_model(algorithm, shared["schema"], release, summary)))
    saved["report"] = str(folder / PARTY_REPORT)
    report["saved"] = saved
    write_atomic(folder / PARTY_REPORT, json.dumps(report, indent=1, allow_nan=False).encode("utf-8") + b"\n")
    return saved


def run_algorithm_party(config: Mapping[str, Any], name: str, base: Path,
                        output: Path | None = None, progress: Progress = SILENT,
                        result_file: Path | None = None) -> dict[str, Any]:
    """Run party ``name`` of ``config["algorithm"]`` over gRPC/mTLS; returns its report. ``config`` is checked
    against its schema first. After the run the party writes its report, and the released model if it received
    it, into ``output`` (default the configuration's ``"output"``: :func:`output_folder`, :func:`write_outputs`),
    and the launcher's result file to ``result_file``. ``progress`` prints a phase line per step (reading the
    data, waiting for the other parties, aligning, running its part, writing)."""
    from mpdp.runtime.grpc_transport import GrpcTransport

    wall0, cpu0 = time.perf_counter(), time.process_time()
    config = check_party_config(config, name, base=base).values
    algorithm = str(config["algorithm"])
    deployment = deployment_for(algorithm)
    parties: dict[str, str] = dict(config["parties"])
    shared = check_algorithm_options(algorithm, load_shared(config, base), f"{name}'s configuration")
    section = shared_section(config, shared)
    seed = config.get("seed")
    if seed is not None:
        warnings.warn(f"party {name} runs with a seeded random source (seed={seed}): for tests and demos only",
                      PrivacyLeakWarning, stacklevel=1)
    root = protocol_root(seed, list(shared.get("rng_path", [])))
    timeout = float(config["timeout"])
    # listening first: a party whose own files are wrong can still tell the others, so they end at once
    transport = GrpcTransport(name, parties, credentials_from_config(config, name, base),
                              connect_timeout=float(config["connect_timeout"]), send_timeout=timeout)
    session = PartySession(transport, timeout=timeout)
    charge = RunCharge(None, None, f"{algorithm}/{name}")
    spec = alignment_spec(config, shared)
    aligning = spec is not None and name in spec.parties
    alignment: Alignment | None = None
    try:
        progress.phase(f"{name}: reading its data and opening its ledger")
        data = _own_data(config, name, base, shared, aligning)
        evaluation = _evaluation_data(config, name, base, shared)
        charge = RunCharge(_ledger(config, name, base), deployment.cost(shared, name), f"{algorithm}/{name}")
        charge.check(config.get("run"))  # before any message: a refused charge sends nothing
        progress.phase(f"{name}: waiting for {', '.join(p for p in parties if p != name)} (up to "
                       f"{transport.connect_timeout:g} s) and comparing the shared configuration")
        session.start(section)  # peers authenticated, configurations equal
        charge = charge_run(charge.ledger, charge.cost, label=charge.label, run=session.run_id)
        if spec is not None and aligning:  # before training: the data parties match their records privately
            progress.phase(f"{name}: aligning its records with {', '.join(p for p in spec.parties if p != name)}")
            data, alignment = _align(session, data, spec, seed, shared["holdings"].get(name), progress.scoped(name))
        progress.phase(f"{name}: running its part of {algorithm}")
        deployment.run_party(PartyContext(name, shared, data, session, root, evaluation, progress.scoped(name)))
    except BaseException as exc:
        if not session.run_id and not isinstance(exc, PartyUnavailableError | AuthenticationError):
            # a party that fails before the protocol still tells the others, so they end now; they may be gone
            # already, and then their own timeouts apply
            with contextlib.suppress(Exception):
                transport.wait_ready(timeout=min(transport.connect_timeout, 5.0))
        try:
            charge.settle(data_sent=session.data_sent)  # spent once a message left; cancelled if none did
        finally:
            session.fail(exc)
        raise
    charge.settle(data_sent=True)  # a finished run has released what it computes
    session.finish()
    progress.phase(f"{name}: done")
    spent = charge.report()
    counted = [r for r in session.runs if r.counted]
    aligned_run = session.runs[0] if alignment is not None else None
    extra = [r for r in session.runs if not r.counted and r is not aligned_run]
    totals = {"bytes_sent": sum(r.traffic.bytes_sent for r in counted),
              "messages": sum(r.traffic.messages_sent for r in counted),
              "coordination_bytes": sum(r.traffic.bytes_sent for r in extra),
              "coordination_messages": sum(r.traffic.messages_sent for r in extra)}
    report: dict[str, Any] = {
        "party": name, "algorithm": algorithm, "digest": digest(section), "run": session.run_id,
        "runs": len(session.runs), "communication": totals, "ledger": spent, "setup_seconds": session.setup_seconds,
        "ready_at": session.ready_at, "startup_cpu_seconds": session.ready_cpu,
        "protocol_seconds": sum(r.seconds for r in session.runs),
        "wall_seconds": time.perf_counter() - wall0, "cpu_seconds": time.process_time() - cpu0,
    }
    if alignment is not None and aligned_run is not None:  # its traffic apart from the algorithm's
        report.update(alignment.as_json())
        report["alignment"] = {"seconds": aligned_run.seconds, **aligned_run.traffic.as_dict()}
    protocol_runs = [r for r in session.runs if r is not aligned_run]
    folder = output_folder(config, base, output)
    model = " and the released model" if deployment.receiver(shared) == name else ""
    progress.phase(f"{name}: writing its report{model} to {folder}")
    write_outputs(deployment, algorithm, name, shared, protocol_runs, folder, report)
    if result_file is not None:
        result_file.write_bytes(encode({"report": json.dumps(report), "runs": encode_runs(deployment, name,
                                                                                           protocol_runs)}))
    return report
