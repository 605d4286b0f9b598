"""The released-model file: versioned JSON with a checksum and a keyed MAC, read strictly. No pickle, no code, no
paths.

``model.json`` is one JSON object::

    {"format": "mpdp.released-model", "version": 2, "sha256": "<hex of the canonical body>",
     "key_id": "<which integrity key sealed it>", "mac": "<HMAC-SHA256 of the canonical body under that key>",
     "body": {"algorithm": "<the registered name>", "kind": "linear", "mpdp_version": "0.1.0",
              "schema": {...TableSchema...}, "parameters": {...by kind...},
              "privacy": {"epsilon_spent": 1.0, "delta_spent": 0.0, "per_party": {"party0": 1.0, ...}},
              "run": {...what the run reported: dataset, parties, metric...}}}

``kind`` says what was released and so what a reader may do with it:

* ``"linear"``: ``parameters = {"link": "logistic" | "identity", "weights": [...], "intercept": x}``; the score
  of a record is ``weights . features + intercept`` on the schema's encoding (features in [-1, 1]; any scaling
  the algorithm applied, such as a unit-ball division, is folded into the weights). ``mpdp predict``.
* ``"mixture"``: paper 002's mixture (:mod:`mpdp.learning.release.mixture`); ``mpdp synthesize``.
* ``"records"``: released DP synthetic records in the schema's attribute view (paper 004's shared data);
  ``mpdp synthesize`` resamples them.

Integrity: the SHA-256 over the canonical JSON of ``body`` (sorted keys, no spaces, no NaN) detects a damaged or
truncated file, but anyone can recompute it. The MAC is what shows the body is the one its writer released: an
HMAC-SHA256 under the writer's organisation key (:class:`~mpdp.integrity.IntegrityKey`, a 0600 file never written
into the model; by default ``mpdp-integrity.key`` in the folder that holds the model directory, or the file
``MPDP_INTEGRITY_KEY`` names), so an edit with a recomputed checksum is refused. A reader verifies with the same
key: :func:`read_model` refuses a model it cannot verify (no key, another organisation's key). A MAC is not a
signature: whoever holds the key can also write models, so share the key only with readers trusted to release
models; a model crossing organisations needs a signature or a trusted channel besides.

:func:`read_model` is the one function that reads a model file. It is deliberately small and strict: a size
limit, UTF-8, duplicate keys refused, NaN and infinities refused, the exact key sets, the format and version,
the checksum, the MAC, then per-kind validation of every parameter against the schema. Anything else raises a
:class:`~mpdp.errors.ModelFileError` (:class:`~mpdp.errors.ModelVersionError` for another format or version,
:class:`~mpdp.errors.ModelChecksumError` for a body that fails its checksum or its MAC).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpdp.errors import ModelChecksumError, ModelFileError, ModelVersionError, ParameterError, explain
from mpdp.files import write_atomic
from mpdp.integrity import IntegrityKey, key_path
from mpdp.learning.release.kinds import check_parameters
from mpdp.learning.release.schema import TableSchema

__all__ = ["FORMAT", "KINDS", "MAX_BYTES", "MODEL_FILE", "VERSION", "ReleasedModel", "model_key_path", "parse_model",
           "read_model", "write_model"]

FORMAT = "mpdp.released-model"
VERSION = 2
MODEL_FILE = "model.json"
MAX_BYTES = 64 << 20
KINDS = ("linear", "mixture", "records")
_TOP = {"format", "version", "sha256", "key_id", "mac", "body"}
_DOMAIN = "mpdp.released-model/v2"
_BODY = {"algorithm", "kind", "mpdp_version", "schema", "parameters", "privacy", "run"}
_PRIVACY = {"epsilon_spent", "delta_spent", "per_party"}


@dataclass(frozen=True)
class ReleasedModel:
    """A released model: what was released (``kind``, ``parameters``), in which ``schema``, at what privacy."""

    algorithm: str
    kind: str
    schema: TableSchema
    parameters: dict[str, Any]
    epsilon_spent: float
    delta_spent: float
    per_party: dict[str, float] | None = None
    mpdp_version: str = ""
    run: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "kind": self.kind, "mpdp_version": self.mpdp_version,
                "schema": self.schema.to_dict(), "parameters": self.parameters,
                "privacy": {"epsilon_spent": self.epsilon_spent, "delta_spent": self.delta_spent,
                            "per_party": self.per_party},
                "run": self.run}


def _canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def model_key_path(directory: str | Path, key: str | Path | None = None) -> Path:
    """The integrity key file for a model saved in ``directory``: ``key``, else ``$MPDP_INTEGRITY_KEY``, else
    ``mpdp-integrity.key`` in the folder holding ``directory`` (beside the model directory, never in it)."""
    return key_path(Path(directory).expanduser().resolve().parent, key)


def write_model(directory: str | Path, model: ReleasedModel, *, key: str | Path | None = None) -> Path:
    """Write ``directory/model.json`` atomically, sealed with the organisation key (:func:`model_key_path`,
    created with mode 0600 on first use); returns its path. Validates by reading the bytes back."""
    from mpdp import __version__

    if not model.mpdp_version:
        model = ReleasedModel(**{**model.__dict__, "mpdp_version": __version__})
    try:
        body = _canonical(model.body())
    except (TypeError, ValueError) as exc:
        raise ModelFileError(explain("model", str(exc), "plain JSON values, all finite", "report this bug")) from exc
    try:
        sealer = IntegrityKey.load_or_create(model_key_path(directory, key))
    except ParameterError as exc:
        raise ModelFileError(f"the model cannot be sealed: {exc}") from exc
    document = {"format": FORMAT, "version": VERSION, "sha256": hashlib.sha256(body).hexdigest(),
                "key_id": sealer.key_id, "mac": sealer.mac(_DOMAIN, body), "body": json.loads(body)}
    data = json.dumps(document, sort_keys=True, indent=1, allow_nan=False).encode("utf-8") + b"\n"
    parse_model(data, key=sealer)  # what we write must be what we read
    path = Path(directory).expanduser() / MODEL_FILE
    write_atomic(path, data)
    return path


def read_model(path: str | Path, *, key: str | Path | None = None) -> ReleasedModel:
    """Read a model file (or a directory holding ``model.json``) strictly, verifying its MAC with the key
    :func:`model_key_path` names (see the module docstring)."""
    file = Path(path).expanduser()
    if file.is_dir():
        file = file / MODEL_FILE
    if not file.is_file():
        raise ModelFileError(explain("model", str(file), f"a {MODEL_FILE} written by mpdp run --save",
                                     "pass the directory given to --save"))
    try:
        sealer = IntegrityKey.load(model_key_path(file.parent, key))
    except ParameterError as exc:
        raise ModelChecksumError(explain(f"model {file}", "no integrity key to verify it with",
                                         "the key of the organisation that saved it",
                                         f"{exc}; or set MPDP_INTEGRITY_KEY to the writer's key file")) from exc
    with file.open("rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    return parse_model(data, key=sealer)


def _refuse_constant(name: str) -> Any:
    raise ModelFileError(explain("model", name, "finite numbers only", "rewrite the model file"))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ModelFileError(explain("model", f"key {key!r} twice", "each key once", "rewrite the model file"))
        out[key] = value
    return out


def parse_model(data: bytes, *, key: IntegrityKey | None = None) -> ReleasedModel:
    """The strict parser behind :func:`read_model`, on the file's bytes (what a fuzzer calls). With ``key`` the
    MAC is verified too; without, only the checksum (damage, not an edit: :func:`read_model` always verifies)."""
    if len(data) > MAX_BYTES:
        raise ModelFileError(explain("model", f"more than {MAX_BYTES} bytes", "a model file", "check the file"))
    try:
        document = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys,
                              parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelFileError(explain("model", f"not JSON ({exc.__class__.__name__}: {exc})",
                                     "the JSON written by mpdp run --save",
                                     "the file is truncated or damaged")) from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        got = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ModelVersionError(explain("model format", got, repr(FORMAT), "pass a model written by mpdp run --save"))
    version = document.get("version")
    if version != VERSION or isinstance(version, bool):
        raise ModelVersionError(explain("model format version", version, f"{VERSION}",
                                        "use the mpdp version that wrote the file, or re-run with --save"))
    if set(document) != _TOP:
        raise ModelFileError(explain("model keys", sorted(document), f"exactly {sorted(_TOP)}",
                                     "do not edit the file"))
    body, digest = document["body"], document["sha256"]
    if not isinstance(digest, str) or hashlib.sha256(_canonical(body)).hexdigest() != digest:
        raise ModelChecksumError(explain("model body", "a body whose sha256 differs from the recorded one",
                                         "the body as written", "the file was edited or damaged; re-run with --save"))
    if key is not None and not key.verify(_DOMAIN, _canonical(body), document["mac"]):
        raise ModelChecksumError(explain(
            "model body", f"a body whose MAC fails under the key {key.path} (id {key.key_id}; the file names "
            f"{str(document['key_id'])[:16]!r})", "the body its writer sealed",
            "the file was edited, or sealed with another organisation's key: use the model as saved, or the "
            "writer's key (MPDP_INTEGRITY_KEY)"))
    return _model(body)


def _model(body: Any) -> ReleasedModel:
    if not isinstance(body, dict) or set(body) != _BODY:
        raise ModelFileError(explain("model body keys", sorted(body) if isinstance(body, dict) else body,
                                     f"exactly {sorted(_BODY)}", "rewrite the model file"))
    kind, algorithm, version = body["kind"], body["algorithm"], body["mpdp_version"]
    if kind not in KINDS or not isinstance(algorithm, str) or not isinstance(version, str):
        raise ModelFileError(explain("model kind", kind, f"one of {KINDS}", "rewrite the model file"))
    schema = TableSchema.from_dict(body["schema"])
    privacy = body["privacy"]
    if not isinstance(privacy, dict) or set(privacy) != _PRIVACY or not all(
            _number(privacy[k]) for k in ("epsilon_spent", "delta_spent")):
        raise ModelFileError(explain("privacy", privacy, f"exactly {sorted(_PRIVACY)} with numbers",
                                     "rewrite the model file"))
    per_party = privacy["per_party"]
    if per_party is not None and not (isinstance(per_party, dict) and all(
            isinstance(k, str) and _number(v) for k, v in per_party.items())):
        raise ModelFileError(explain("privacy.per_party", per_party, "null or {party: epsilon}", "rewrite the file"))
    if not isinstance(body["run"], dict) or not isinstance(body["parameters"], dict):
        raise ModelFileError(explain("run/parameters", "not objects", "JSON objects", "rewrite the model file"))
    check_parameters(kind, body["parameters"], schema)
    return ReleasedModel(algorithm=algorithm, kind=kind, schema=schema, parameters=body["parameters"],
                         epsilon_spent=float(privacy["epsilon_spent"]), delta_spent=float(privacy["delta_spent"]),
                         per_party=None if per_party is None else {k: float(v) for k, v in per_party.items()},
                         mpdp_version=version, run=body["run"])


def _number(value: Any) -> bool:
    """A JSON number, never a bool (the parser has already refused NaN and infinities)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
