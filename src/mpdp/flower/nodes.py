"""What a SuperNode holds for mpdp: its role and name, its own rows, its own ledger, its aggregator key.

Everything here is read from the node's own configuration (``flower-supernode --node-config``), never from
the hub: ``role`` (``"client"`` or ``"aggregator"``), ``name`` (its party name, e.g. ``party3`` / ``agg0``),
for a client ``data`` (an ``.npz`` file with ``X`` (n, d) and ``y`` (n,), read without pickle) and ``ledger``
(its :class:`~mpdp.dp.accounting.PrivacyLedger` file, created on first use with the budget ``epsilon`` /
``delta`` of the node config, else of the run), for an aggregator optionally ``seed`` (experiments only: the
aggregator's noise then equals ``mpdp run --seed``'s; anyone with the seed knows the noise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting import PrivacyCost, PrivacyLedger
from mpdp.errors import DatasetError, ParameterError, ShapeMismatchError, explain
from mpdp.randomness import RandomSource

__all__ = ["NodeIdentity", "charge_once", "client_rows", "identity", "noise_source", "open_ledger", "write_rows"]

FloatArray = npt.NDArray[np.float64]
ROLES = ("client", "aggregator")


@dataclass(frozen=True)
class NodeIdentity:
    role: str
    name: str


def _text(config: Mapping[str, Any], key: str) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not value:
        raise ParameterError(explain(f"node config {key!r}", value, "a non-empty string",
                                     f"start the SuperNode with --node-config '{key}=\"...\"'"))
    return value


def identity(config: Mapping[str, Any]) -> NodeIdentity:
    role = _text(config, "role")
    if role not in ROLES:
        raise ParameterError(explain("node config 'role'", role, f"one of {ROLES}", "set role=\"client\" or "
                                     "role=\"aggregator\""))
    return NodeIdentity(role, _text(config, "name"))


def write_rows(path: str | Path, X: FloatArray, y: FloatArray) -> Path:
    """Write a client's rows (prepared features and labels) where its SuperNode's ``data`` points."""
    out = Path(path)
    np.savez(out, X=np.asarray(X, dtype=np.float64), y=np.asarray(y, dtype=np.float64))
    return out


def client_rows(config: Mapping[str, Any]) -> tuple[FloatArray, FloatArray]:
    """The client's own rows from its ``data`` file."""
    path = Path(_text(config, "data"))
    try:
        with np.load(path, allow_pickle=False) as data:
            X, y = np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.float64)
    except (OSError, KeyError, ValueError) as exc:
        raise DatasetError(explain("client data file", str(path), "an .npz file with arrays X (n, d) and y (n,)",
                                   f"write it with mpdp.flower.nodes.write_rows ({exc})")) from exc
    if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] < 1:
        raise ShapeMismatchError(explain("client data", f"X {X.shape}, y {y.shape}", "X (n, d), y (n,), n >= 1",
                                         "write matching rows"))
    return X, y


def open_ledger(config: Mapping[str, Any], name: str, *, epsilon: float, delta: float, method: str) -> PrivacyLedger:
    """The client's own ledger file (created with the node's budget, else the run's)."""
    path = Path(_text(config, "ledger"))
    budget_eps = float(config.get("epsilon", epsilon))
    budget_delta = float(config.get("delta", delta))
    return PrivacyLedger.open_or_create(path, epsilon=budget_eps, delta=budget_delta, method=method,
                                        subject=f"party:{name}")


def charge_once(ledger: PrivacyLedger, cost: PrivacyCost, label: str) -> None:
    """Charge ``cost`` for the run (and release) ``label`` names, once: the ledger keys the charge by it, under
    its lock, so concurrent ClientApp processes of one node charge it once too (a run charges before its first
    release; a client that missed earlier rounds charges when it first contributes)."""
    ledger.spend(cost, label=label, run=label)


def noise_source(config: Mapping[str, Any], path: tuple[str, ...]) -> RandomSource | None:
    """The seeded source ``RandomSource.seeded(seed).spawn(path[0]).spawn(path[1])...`` when the node config has
    a ``seed``; None (fresh OS entropy) otherwise."""
    seed = config.get("seed")
    if seed is None:
        return None
    rng = RandomSource.seeded(int(seed))
    for label in path:
        rng = rng.spawn(label)
    return rng
