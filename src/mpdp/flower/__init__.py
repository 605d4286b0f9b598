"""Horizontal algorithms on Flower (extra ``flower``): real clients as SuperNodes, mpdp's secure aggregation
carried in Flower messages.

Only this package imports ``flwr``; nothing else in mpdp needs it. Layout, one job per module:

* :mod:`~mpdp.flower.relay`: a party's protocol step run against a relayed batch of messages, shares sealed
  (:mod:`mpdp.crypto.sealed_box`) so the hub relays them without reading them;
* :mod:`~mpdp.flower.secagg`: :mod:`mpdp.protocols.aggregation` as two hub rounds (contribute, aggregate), with
  the dropout threshold enforced by the hub and rechecked by the protocol's server code;
* :mod:`~mpdp.flower.messages`: mpdp-codec payloads in Flower messages, typed errors across the wire, one round
  of send-and-collect with a deadline;
* :mod:`~mpdp.flower.nodes`: a SuperNode's own configuration: role, name, its rows, its ledger, its seed;
* :mod:`~mpdp.flower.distributed_erm`: paper 003's MPC Grad P and MPC Out P as ``server_app`` / ``client_app``;
* :mod:`~mpdp.flower.ofpa_ofaa`: paper 001's OFPA and OFAA;
* :mod:`~mpdp.flower.inprocess`: the apps' code in one process (tests, benchmarks);
* :mod:`~mpdp.flower.launcher`: :func:`launch`: SuperLink + one SuperNode process per party on 127.0.0.1.

Randomness and equality with ``mpdp run``
-----------------------------------------
Flower decides the order in which nodes run and reply; nothing in the apps depends on it: the hub keys replies
by party name, additive shares are summed exactly in Z_2^64, and each aggregator draws its noise from its own
source (seeded from its node config in experiments, replaying earlier rounds' draws because Flower starts a
fresh ClientApp process per message). What Flower's runtime does change is fresh per round and cancels: the
clients' share masks and sealing keys. So under a fixed seed and no dropouts the model equals ``mpdp run``'s
up to the fixed-point rounding of each client's vector (one grid unit ``2^-24`` per client and round, when a
client's floating-point gradient lands on the other side of a rounding boundary than in the vectorised run).

Trust model
-----------
As :mod:`mpdp.protocols.aggregation`: semi-honest parties, the ServerApp is the hub and the protocol's server,
not an aggregator. The aggregators are separate SuperNodes (``role="aggregator"``) that must not collude with
each other. Paper 003's noise is made by the aggregators on their shares; no client contributes noise, so
dropped clients remove none.
"""

from __future__ import annotations

from typing import Any

__all__ = ["launch"]


def launch(algorithm: str, config: Any, **kwargs: Any) -> Any:
    """:func:`mpdp.flower.launcher.launch` (imported on call, so ``import mpdp.flower`` needs no ``flwr``)."""
    from mpdp.flower.launcher import launch as run

    return run(algorithm, config, **kwargs)
