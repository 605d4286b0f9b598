"""Run one party of a small test protocol in its own process (used by test_grpc_transport.py).

``python -m tests.runtime.net_helper NAME ADDRESSES_JSON CERT_DIR BEHAVIOUR [TIMEOUT]`` prints one JSON line:
``{"ok": result}`` or ``{"error": type, "message": text}``. Behaviours: ``chain`` (a ring of messages),
``die`` (exit abruptly), ``fail`` (raise in the role), ``stall`` (sleep).
"""

from __future__ import annotations

import json
import os
import sys
import time

from mpdp.errors import MpdpError
from mpdp.randomness import RandomSource
from mpdp.runtime import Comm
from mpdp.runtime.certs import PartyCredentials
from mpdp.runtime.grpc_transport import GrpcTransport
from mpdp.runtime.network_party import run_network_party


def chain(comm: Comm) -> int:
    """Each party adds its index to a token passed around the ring twice."""
    n, i = len(comm.parties), comm.index
    nxt, prv = comm.parties[(i + 1) % n], comm.parties[(i - 1) % n]
    token = 0
    for lap in range(2):
        if i == 0:
            comm.send(nxt, token + i, label=f"lap{lap}")
            token = comm.recv(prv, label=f"lap{lap}")
        else:
            token = comm.recv(prv, label=f"lap{lap}")
            comm.send(nxt, token + i, label=f"lap{lap}")
    return int(token)


def main() -> None:
    name, addresses, cert_dir, behaviour = sys.argv[1:5]
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 20.0
    parties = json.loads(addresses)
    victim = list(parties)[-1]

    def role(comm: Comm) -> object:
        if comm.name == victim and behaviour in ("die", "fail", "stall"):
            time.sleep(0.5)
            if behaviour == "die":
                os._exit(1)
            if behaviour == "fail":
                raise RuntimeError("the victim's model diverged")
            time.sleep(60)
        return chain(comm)

    try:
        transport = GrpcTransport(name, parties, PartyCredentials.in_directory(cert_dir, name), connect_timeout=120,
                                  send_timeout=timeout)
        result, traffic, _ = run_network_party(transport, role, rng=RandomSource.seeded(1).spawn(name),
                                               timeout=timeout)
        print(json.dumps({"ok": result, "bytes": traffic.bytes_sent}))
    except MpdpError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))


if __name__ == "__main__":
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    main()
