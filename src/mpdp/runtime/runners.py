"""What every in-process runner of :func:`~mpdp.runtime.run_protocol` shares: how it runs one party, and how it
records a party's failure.

The runners (threads in :mod:`mpdp.runtime.party`, greenlets in :mod:`mpdp.runtime.cooperative`, forked
processes in :mod:`mpdp.runtime.processes`, and both at once in :mod:`mpdp.runtime.mixed`) take a
:data:`RunOne` and report :data:`Failure` records, so the caller settles every run the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpdp.runtime.comm import PartyTraffic
from mpdp.runtime.transport import Transport

__all__ = ["Failure", "RunOne"]

#: runs party ``name`` over a transport; returns its result and traffic
RunOne = Callable[[str, Transport], tuple[Any, PartyTraffic]]
#: (when, party, exception), as every runner records a failure
Failure = tuple[float, str, BaseException]
