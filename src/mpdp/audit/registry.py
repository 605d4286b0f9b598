"""The audited release paths by name, for ``mpdp audit`` and ``python -m bench audit``.

Each entry builds the real path's :class:`~mpdp.audit.case.AuditCase` (``broken=False``) or its deliberately
broken variant (``broken=True``). ``quick_samples`` is the budget of the CI subset: enough for the broken
variant to be flagged (measured margin stated in each adapter), far below the full budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mpdp.audit.case import AuditCase
from mpdp.audit.cases import distributed_erm, dp_tree, dpvi, functional_mechanism, noise, ofaa, ofpa
from mpdp.errors import ParameterError, explain

__all__ = ["AUDITS", "Entry", "build", "names"]


@dataclass(frozen=True)
class Entry:
    build: Callable[[bool], AuditCase]
    quick_samples: int
    paper: str


AUDITS: dict[str, Entry] = {
    "discrete-laplace": Entry(noise.discrete_laplace_case, 20_000, "-"),
    "discrete-gaussian": Entry(noise.discrete_gaussian_case, 100_000, "-"),
    "dp-tree-split": Entry(dp_tree.split_choice_case, 4_000, "004"),
    "pfds-leaf-counts": Entry(dp_tree.leaf_counts_case, 2_000, "004"),
    "fm-coefficients": Entry(functional_mechanism.fm_case, 800, "000"),
    "ofaa-coefficients": Entry(ofaa.ofaa_case, 2_000, "001"),
    "ofpa-minimiser": Entry(ofpa.ofpa_case, 1_200, "001"),
    "dpvi-step": Entry(dpvi.dpvi_step_case, 20_000, "002"),
    "mpc-outp": Entry(distributed_erm.mpc_outp_case, 20_000, "003"),
    "mpc-gradp": Entry(distributed_erm.mpc_gradp_case, 20_000, "003"),
}


def names() -> tuple[str, ...]:
    return tuple(AUDITS)


def build(name: str, *, broken: bool = False) -> AuditCase:
    """The named case (``broken=True``: its deliberately broken variant)."""
    entry = AUDITS.get(name)
    if entry is None:
        raise ParameterError(explain("audit name", name, f"one of {', '.join(AUDITS)}",
                                     "run `mpdp audit --list` for the names, or `mpdp audit --all`"))
    return entry.build(broken)
