"""Parties as forked OS processes on this machine, exchanging bytes over socketpairs.

:func:`mpdp.runtime.run_protocol` with ``processes=True`` runs each party's role here: one
``socket.socketpair`` per pair of parties carries that pair's messages as length-prefixed frames (the bytes
:class:`~mpdp.runtime.comm.Comm` produced, nothing else), and one more per party carries its report back to
the parent. Roles reach the children by ``fork``: a child inherits the parent's memory, so nothing about a
role is serialised; results and failures come back encoded with the wire codec (no pickle).

When to use it: the in-memory transport runs every party as a thread of one process, so the GIL serialises
the parties' Python work and a run's wall time is the *sum* of the parties' CPU. Here each party has its own
interpreter, as on one machine per party, while messages still cost microseconds, not a network round trip;
it pays where the host has a core per party to spare.

Security: after the fork each party's state lives in its own address space; a child closes every socket
but its own, so it can reach its peers only through its pair sockets. The parent holds every role before
the fork (it built them) and receives each party's result and traffic counts, as the threaded runner does.

Failures: a child that raises reports the exception's type, message and traceback to the parent, which tells
the other children to abort (their waiting receives fail with ProtocolAbortError), gives them ``GRACE``
seconds, kills whoever is left and reaps every child. A child that dies without a report is a
PartyUnavailableError; one that hangs is found by the receive timeouts of the parties waiting for it. On
Linux the kernel kills the children if the runner itself dies (``PR_SET_PDEATHSIG``).

Limitations: unlike :class:`~mpdp.runtime.transport.InMemoryTransport` there is no instant deadlock
detection (a protocol whose parties all wait on each other fails after ``timeout``); fork copies only the
calling thread, so call the runner from a process that holds no locks in other threads (no running
threaded protocol or gRPC server in the same process); a party that outlives every receive aimed at it
(computing forever with nobody waiting) keeps the run waiting, as a thread would.

The modules (all but the runner shared with :mod:`mpdp.runtime.mixed`, which forks some parties and runs the
others as greenlets): :mod:`~mpdp.runtime.processes.frames` (frames over a non-blocking socket),
:mod:`~mpdp.runtime.processes.child` (a forked party's endpoint and report),
:mod:`~mpdp.runtime.processes.fork` (socketpairs, fork, reaping), :mod:`~mpdp.runtime.processes.reports`
(a report read, a failure rebuilt, aborts sent) and :mod:`~mpdp.runtime.processes.runner` (:func:`run_forked`).
"""

from mpdp.runtime.processes.runner import run_forked

__all__ = ["run_forked"]
