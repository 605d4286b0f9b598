"""Sensitivities of the queries PFDS's private trees ask (paper 004, Fioretto & Van Hentenryck, section 3).

Neighbouring datasets differ in one individual. Paper 004 (section 2.3, "differing in at most one individual")
and Friedman & Schuster [14], whose Max operator it uses, take *unbounded* neighbours: one record added or
removed. Every function here takes ``neighbouring`` so a caller under *bounded* neighbours (one record
replaced) gets the sound, doubled value instead of silently reusing the unbounded one.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 3.1 (Algorithm 3, Theorem 3.1) and section 3.2.1
(Algorithm 5, Theorem 3.2).
Friedman & Schuster, "Data mining with differential privacy", KDD 2010 (Max operator, sensitivity 1).
"""

from __future__ import annotations

from typing import Literal

from mpdp.errors import ParameterError, explain

__all__ = ["Neighbouring", "class_histogram_sensitivity", "level_count_sensitivity", "max_operator_sensitivity"]

Neighbouring = Literal["add_remove", "replace"]


def _factor(neighbouring: str) -> float:
    if neighbouring == "add_remove":
        return 1.0
    if neighbouring == "replace":
        return 2.0
    raise ParameterError(explain("neighbouring", neighbouring, "'add_remove' or 'replace'",
                                 "pass neighbouring='add_remove' (the paper's notion)"))


def max_operator_sensitivity(neighbouring: Neighbouring = "add_remove") -> float:
    """Sensitivity of the split utility ``u(D, a, v) = max_l |D_{a<v}^{y=l}| + max_l |D_{a>=v}^{y=l}|``: 1.

    Adding or removing one record changes one class count on one side of the split by one, so that side's
    maximum moves by at most one and the other side's not at all. Replacing a record removes it from one
    side and adds it to one side: a removal can only lower a maximum and an addition only raise one, each by
    at most one, so if both land on the same side its maximum moves by at most one, and if they land on
    different sides the two moves have opposite signs. Either way ``|Delta u| <= 1``: unlike a count
    histogram, the Max operator's sensitivity does not double under bounded neighbours.
    """
    _factor(neighbouring)  # validates the name
    return 1.0


def class_histogram_sensitivity(neighbouring: Neighbouring = "add_remove") -> float:
    """L1 sensitivity of the per-class counts of *all* leaves of a tree taken together (Algorithm 3, line 13).

    The leaves partition the data universe and every record has one label, so one record added or removed
    changes one count of one leaf by one (L1 = 1); one record replaced changes at most two counts (L1 = 2).
    Hence a single Laplace scale ``sensitivity / eps`` protects the whole leaf level at once (parallel
    composition over leaves, Theorem 3.1).
    """
    return _factor(neighbouring)


def level_count_sensitivity(neighbouring: Neighbouring = "add_remove") -> float:
    """L1 sensitivity of the node sizes of one tree level (Algorithm 5, lines 1-2).

    The nodes of one level partition the data universe (categorical branches cover every category,
    numeric branches both half-lines), so one record changes one node size by one (add/remove) or two node
    sizes by one each (replace).
    """
    return _factor(neighbouring)
