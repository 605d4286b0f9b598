"""The audited release paths by name, for ``mpdp audit`` and ``python -m bench audit``.

Each entry builds the real path's :class:`~mpdp.audit.case.AuditCase` (``broken=False``) or its deliberately
broken variant (``broken=True``). ``quick_samples`` is the budget of the CI subset: enough for the broken
variant to be flagged (measured margin stated in each adapter), far below the full budget.

The noise samplers' audits are listed here; every algorithm's audited paths come from its spec
(:attr:`AlgorithmSpec.audits <mpdp.learning.spec.AlgorithmSpec.audits>`), in the registry's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mpdp.audit.case import AuditCase
from mpdp.audit.cases import noise
from mpdp.errors import ParameterError, explain
from mpdp.learning.registry import algorithms

__all__ = ["AUDITS", "Entry", "audits", "build", "names"]


@dataclass(frozen=True)
class Entry:
    build: Callable[[bool], AuditCase]
    quick_samples: int
    paper: str


#: The samplers' own audits (not an algorithm's release path).
SAMPLERS: dict[str, Entry] = {
    "discrete-laplace": Entry(noise.discrete_laplace_case, 20_000, "-"),
    "discrete-gaussian": Entry(noise.discrete_gaussian_case, 100_000, "-"),
}


def _lazy(hook: Any) -> Callable[[bool], AuditCase]:
    def build(broken: bool) -> AuditCase:
        case: AuditCase = hook.load()(broken)
        return case

    return build


def audits() -> dict[str, Entry]:
    """Every audited path by name: the samplers', then each algorithm's from its spec."""
    found = dict(SAMPLERS)
    for spec in algorithms().values():
        for hook in spec.audits:
            if hook.name not in found:
                found[hook.name] = Entry(_lazy(hook.build), hook.quick_samples, spec.paper)
    return found


#: every audit by name (derived from the specs once, at import)
AUDITS: dict[str, Entry] = audits()


def names() -> tuple[str, ...]:
    return tuple(AUDITS)


def build(name: str, *, broken: bool = False) -> AuditCase:
    """The named case (``broken=True``: its deliberately broken variant)."""
    entry = AUDITS.get(name)
    if entry is None:
        raise ParameterError(explain("audit name", name, f"one of {', '.join(AUDITS)}",
                                     "run `mpdp audit --list` for the names, or `mpdp audit --all`"))
    return entry.build(broken)
