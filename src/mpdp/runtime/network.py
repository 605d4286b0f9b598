"""The network model: the wall time a run would take between organisations, from what it measured.

One model serves ``mpdp run/launch --network`` (:meth:`NetworkModel.model`, a record) and the benchmarks'
``lan_seconds`` / ``wan_seconds`` (:meth:`NetworkModel.seconds`).

``modelled seconds = compute seconds + rounds x RTT + bytes / bandwidth``: the parties' measured time (in
memory or on loopback, where the network costs next to nothing), plus one round trip per communication round
on the critical path (a round's messages travel in parallel), plus the time to push the bytes of the busiest
party's uplink (every party's traffic when the run does not say who sent what, which over-states it).
Named models: ``lan`` (1 ms, 1 Gb/s) and ``wan`` (50 ms, 100 Mb/s); or ``RTT_ms,Mbps``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NAMED", "NetworkModel", "network_model"]


@dataclass(frozen=True)
class NetworkModel:
    name: str
    rtt_ms: float
    mbps: float

    def seconds(self, compute_seconds: float, rounds: float, critical_bytes: float) -> float:
        """``compute + rounds x RTT + bytes x 8 / bandwidth``: ``critical_bytes`` are the busiest party's (every
        party sends its bytes on its own link, in parallel)."""
        return compute_seconds + rounds * self.rtt_ms / 1000.0 + critical_bytes * 8.0 / (self.mbps * 1e6)

    def model(self, compute_seconds: float, communication: Mapping[str, Any],
              bytes_per_party: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The modelled wall time of a run that computed for ``compute_seconds`` and sent ``communication``."""
        rounds = int(communication.get("rounds", 0))
        if bytes_per_party:
            critical, basis = max(bytes_per_party.values()), "busiest party's bytes sent"
        else:
            critical, basis = int(communication.get("bytes", 0)), "all parties' bytes (upper bound)"
        latency = self.seconds(0.0, rounds, 0)
        transfer = self.seconds(0.0, 0, critical)
        return {"model": self.name, "rtt_ms": self.rtt_ms, "mbps": self.mbps, "compute_seconds": compute_seconds,
                "latency_seconds": latency, "transfer_seconds": transfer, "bytes_basis": basis,
                "modelled_seconds": self.seconds(compute_seconds, rounds, critical)}


NAMED = {"lan": NetworkModel("lan", 1.0, 1000.0), "wan": NetworkModel("wan", 50.0, 100.0)}


def network_model(text: str) -> NetworkModel:
    """``lan``, ``wan`` or ``RTT_ms,Mbps`` (argparse type)."""
    key = text.strip().lower()
    if key in NAMED:
        return NAMED[key]
    rtt, comma, mbps = key.partition(",")
    try:
        model = NetworkModel(f"{float(rtt):g}ms,{float(mbps):g}Mbps", float(rtt), float(mbps))
    except ValueError:
        model = None
    if not comma or model is None or not (math.isfinite(model.rtt_ms) and model.rtt_ms >= 0
                                          and math.isfinite(model.mbps) and model.mbps > 0):
        raise argparse.ArgumentTypeError(f"expected lan, wan or RTT_ms,Mbps (RTT >= 0, Mbps > 0), got {text!r} "
                                         "(write e.g. --network 20,500)")
    return model
