"""Sensitivities of the functional mechanism (FM) for linear and logistic regression, centralised and split
across parties that hold column blocks of the same records.

The FM (Zhang et al. 2012) writes the objective as a polynomial in the weights, ``f_D(w) = sum_phi
lambda_phi phi(w)``, and adds ``Lap(Delta_f / eps)`` to every coefficient ``lambda_phi``. Lemma 1 of paper 000
bounds the L1 change of the coefficient vector when one record changes by twice the largest L1 mass one record
can put on the coefficients, ``Delta_f = 2 max_t sum_phi |lambda_phi t|``.

Coefficient blocks
------------------
The objectives here are quadratic, ``f(w) = const + sum_a lambda_a w_a + sum_{a <= b} lambda_ab w_a w_b``, and
split into *blocks* by who holds the data (paper 000, Equation 5), with parties ``0..K-1`` and ``label_party``
holding the label:

* ``("const",)``: ``sum_i y_i^2`` (linear only; logistic's constant ``n log 2`` carries no data), label party;
* ``("lin", k)``: ``lambda_a`` for party k's columns, ``sum_i r(y_i) x_ia`` with ``r = -2y`` (linear) or
  ``r = 1/2 - y`` (logistic): single-party when ``k == label_party``, else cross-party (k and the label party);
* ``("quad", k, l)``, ``k <= l``: ``lambda_ab`` for ``a`` in party k, ``b`` in party l. Monomials are a *set*
  (``w_a w_b == w_b w_a``), so an off-diagonal coefficient is ``2 q sum_i x_ia x_ib`` and a diagonal one
  ``q sum_i x_ia^2`` with ``q = 1`` (linear) or ``q = f''(0)/2! = 1/8`` (logistic).

Public domain
-------------
Every feature lies in ``[-1, 1]``; the label in ``[-1, 1]`` (linear) or ``{0, 1}`` (logistic); and party k's
block of a row has L1 norm at most ``c_k`` (``party_l1[k]``). The paper's setting is ``c_k = d_k`` (implied by
the box). A smaller public ``c_k`` comes from the encoding (a one-hot group contributes at most 1 whatever its
width) or from a norm constraint (``||x^k||_2 <= 1`` gives ``c_k = sqrt(d_k)``): it must be enforced on the data.

Per-record L1 mass of each block (``c = sum_k c_k``):

=================  ===================  ====================
block              linear               logistic
=================  ===================  ====================
const              1                    0
lin k              2 c_k                c_k / 2
quad k, k          c_k^2                c_k^2 / 8
quad k, l (k < l)  2 c_k c_l            c_k c_l / 4
total              1 + 2c + c^2         c/2 + c^2/8
=================  ===================  ====================

so ``Delta_f = 2(1 + 2d + d^2)`` (linear) and ``d^2/4 + d`` (logistic) at ``c = d``, the paper's values.

Errata (paper 000, Theorem 2 worked example, linear regression)
----------------------------------------------------------------
The paper gives ``Delta_f^1 = 2(1 + 2d + d^1 d)`` and ``Delta_f^k = 2(2d^k + d^k d)``: it counts the cross-party
quadratic coefficients ``x_a^k x_b^l`` once (``d^k (d - d^k)``), but the symmetric objective holds them twice
(``lambda_ab`` and ``lambda_ba``, or one monomial with coefficient ``2 x_a x_b``), and both change when party
k's part of a record changes. Example: d = 3, one column per party, party 2 flips its feature from 1 to -1 in a
record with ``y = x_1 = x_3 = 1``: the coefficients move by 12 in L1, above the paper's ``Delta_f^2 = 10``. The
sound Lemma 2 bound is ``2(1 + 2d + d^1 (2d - d^1))`` and ``2(2 d^k + d^k (2d - d^k))``, the form the paper
itself uses for logistic regression. :func:`party_sensitivity` returns the sound value;
:func:`paper_linear_party_sensitivity` keeps the printed formula for comparison only.

Corollary 1 (bottom-up budgets) states ``eps = sum_k Delta_f/Delta_g^k eps^k + sum_kl Delta_f/Delta_h^kl
eps^kl``. With noise ``Lap(Delta_g^k/eps^k)`` on party k's single-party block and ``Lap(Delta_h^kl/eps^kl)``
on the (k, l) cross-party block, one record moves each group's coefficients by at most that group's
sensitivity, so sequential composition gives the tighter ``eps = sum_k eps^k + sum_{k<l} eps^kl``
(:func:`bottom_up_epsilon`); the corollary's value (:func:`corollary1_epsilon`) is valid but over-reports.

References
----------
Paper 000 (Xu, Yuan, Wu), sections "Functional Mechanism", "Collecting single-party and cross-party
coefficients" (Lemma 1, Lemma 2, Theorem 2), "Application to Logistic Regression", "Extension to the Bottom-up
Case" (Corollary 1). Zhang, Zhang, Xiao, Yang, Winslett, "Functional mechanism", PVLDB 5(11), 2012.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from mpdp.errors import ParameterError, explain

__all__ = [
    "Block",
    "FMObjective",
    "block_parties",
    "blocks",
    "bottom_up_epsilon",
    "bottom_up_party_epsilons",
    "coefficient_masses",
    "corollary1_epsilon",
    "cross_party_sensitivity",
    "global_sensitivity",
    "linear_regression_sensitivity",
    "logistic_regression_sensitivity",
    "paper_linear_party_sensitivity",
    "paper_logistic_party_sensitivity",
    "party_sensitivity",
    "single_party_sensitivity",
    "top_down_party_epsilons",
]

FMObjective = Literal["linear", "logistic"]
#: A coefficient block: ("const",), ("lin", k) or ("quad", k, l) with k <= l.
Block = tuple[str] | tuple[str, int] | tuple[str, int, int]

# Per-record coefficient weights: |r(y)| bound of the linear term and q of the quadratic term.
_LINEAR_WEIGHT = {"linear": 2.0, "logistic": 0.5}
_QUADRATIC_WEIGHT = {"linear": 1.0, "logistic": 0.125}
_CONSTANT_MASS = {"linear": 1.0, "logistic": 0.0}


def _check_objective(objective: str) -> None:
    if objective not in _LINEAR_WEIGHT:
        raise ParameterError(explain("objective", objective, "'linear' or 'logistic'",
                                     "choose the regression the functional mechanism perturbs"))


def _check_dimension(d: int, name: str = "d") -> None:
    if isinstance(d, bool) or not isinstance(d, int) or d < 0:
        raise ParameterError(explain(name, d, "a non-negative int (number of encoded features)",
                                     "pass the column count of X, e.g. X.shape[1]"))


def _check_parties(party_l1: Sequence[float], label_party: int) -> tuple[float, ...]:
    bounds = tuple(float(c) for c in party_l1)
    if not bounds:
        raise ParameterError(explain("party_l1", party_l1, "one L1 bound per party (at least one party)",
                                     "pass e.g. party_l1=(d_1, d_2) for the box domain"))
    if any(not math.isfinite(c) or c < 0 for c in bounds):
        raise ParameterError(explain("party_l1", party_l1, "finite bounds >= 0",
                                     "use each party's column count d_k, or a smaller public L1 bound"))
    if isinstance(label_party, bool) or not isinstance(label_party, int) or not 0 <= label_party < len(bounds):
        raise ParameterError(explain("label_party", label_party, f"an index in [0, {len(bounds)})",
                                     "name the party that holds the label"))
    return bounds


def _check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    value = float(epsilon)
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(explain(name, epsilon, "a finite number > 0", f"pass e.g. {name}=1.0"))
    return value


def blocks(n_parties: int) -> tuple[Block, ...]:
    """Every coefficient block of a ``n_parties``-party dissection, in canonical order."""
    if isinstance(n_parties, bool) or not isinstance(n_parties, int) or n_parties < 1:
        raise ParameterError(explain("n_parties", n_parties, "an int >= 1", "pass the number of parties K"))
    out: list[Block] = [("const",)]
    out += [("lin", k) for k in range(n_parties)]
    out += [("quad", k, l) for k in range(n_parties) for l in range(k, n_parties)]  # noqa: E741
    return tuple(out)


def block_parties(block: Block, label_party: int) -> frozenset[int]:
    """The parties whose data a block's coefficients depend on (Equation 5's g vs h)."""
    if block == ("const",):
        return frozenset({label_party})
    if block[0] == "lin" and len(block) == 2:
        return frozenset({block[1], label_party})
    if block[0] == "quad" and len(block) == 3:
        return frozenset({block[1], block[2]})
    raise ParameterError(explain("block", block, "('const',), ('lin', k) or ('quad', k, l)", "use blocks(K)"))


def coefficient_masses(objective: FMObjective, party_l1: Sequence[float], label_party: int) -> dict[Block, float]:
    """Largest L1 mass one record can put on each block's coefficients (the table in the module docstring)."""
    _check_objective(objective)
    c = _check_parties(party_l1, label_party)
    lin, quad = _LINEAR_WEIGHT[objective], _QUADRATIC_WEIGHT[objective]
    masses: dict[Block, float] = {}
    for block in blocks(len(c)):
        if block[0] == "const":
            masses[block] = _CONSTANT_MASS[objective]
        elif block[0] == "lin":
            masses[block] = lin * c[block[1]]  # type: ignore[misc]
        else:
            k, l = block[1], block[2]  # type: ignore[misc]  # noqa: E741
            # sum_{a<=b in k} |coef| = q (sum_a |x_a|)^2; across parties every monomial appears once with 2q.
            masses[block] = quad * c[k] * c[k] if k == l else 2.0 * quad * c[k] * c[l]
    return masses


def global_sensitivity(objective: FMObjective, party_l1: Sequence[float], label_party: int = 0) -> float:
    """Lemma 1: ``Delta_f = 2 max_t sum_phi |lambda_phi t|`` over every block."""
    return 2.0 * sum(coefficient_masses(objective, party_l1, label_party).values())


def linear_regression_sensitivity(d: int) -> float:
    """``Delta_f = 2 (1 + 2d + d^2)`` for linear regression on ``x in [-1, 1]^d``, ``y in [-1, 1]``."""
    _check_dimension(d)
    return 2.0 * (1 + 2 * d + d * d)


def logistic_regression_sensitivity(d: int) -> float:
    """``Delta_f = d^2/4 + d`` for the order-2 Taylor logistic objective on ``x in [-1, 1]^d``, ``y in {0, 1}``."""
    _check_dimension(d)
    return d * d / 4.0 + d


def party_sensitivity(objective: FMObjective, party_l1: Sequence[float], label_party: int, party: int) -> float:
    """Lemma 2 (sound): ``Delta_f^k``, twice the mass of every block that depends on party k's data.

    See the module docstring for why this differs from the paper's printed linear-regression formula.
    """
    masses = coefficient_masses(objective, party_l1, label_party)
    if isinstance(party, bool) or not isinstance(party, int) or not 0 <= party < len(party_l1):
        raise ParameterError(explain("party", party, f"an index in [0, {len(party_l1)})", "name a party"))
    return 2.0 * sum(m for b, m in masses.items() if party in block_parties(b, label_party))


def single_party_sensitivity(objective: FMObjective, party_l1: Sequence[float], label_party: int,
                             party: int) -> float:
    """``Delta_g^k``: sensitivity of party k's single-party coefficients (blocks depending on k alone)."""
    masses = coefficient_masses(objective, party_l1, label_party)
    return 2.0 * sum(m for b, m in masses.items() if block_parties(b, label_party) == frozenset({party}))


def cross_party_sensitivity(objective: FMObjective, party_l1: Sequence[float], label_party: int,
                            k: int, l: int) -> float:  # noqa: E741
    """``Delta_h^kl``: sensitivity of the coefficients that depend on exactly parties k and l (k != l)."""
    if k == l:
        raise ParameterError(explain("(k, l)", (k, l), "two different parties",
                                     "use single_party_sensitivity for one party"))
    masses = coefficient_masses(objective, party_l1, label_party)
    return 2.0 * sum(m for b, m in masses.items() if block_parties(b, label_party) == frozenset({k, l}))


def paper_linear_party_sensitivity(d_k: int, d: int, holds_label: bool) -> float:
    """The paper's printed Theorem 2 example: ``2(1 + 2d + d^1 d)`` / ``2(2 d^k + d^k d)``. NOT a valid bound.

    Kept so tests and reports can show the erratum; mpdp uses :func:`party_sensitivity`.
    """
    _check_dimension(d)
    _check_dimension(d_k, "d_k")
    return 2.0 * (1 + 2 * d + d_k * d) if holds_label else 2.0 * (2 * d_k + d_k * d)


def paper_logistic_party_sensitivity(d_k: int, d: int, holds_label: bool) -> float:
    """The paper's logistic example: ``d + d^1 (2d - d^1)/4`` / ``d^k + d^k (2d - d^k)/4`` (equals the sound one)."""
    _check_dimension(d)
    _check_dimension(d_k, "d_k")
    return (d if holds_label else d_k) + d_k * (2 * d - d_k) / 4.0


def top_down_party_epsilons(objective: FMObjective, party_l1: Sequence[float], label_party: int,
                            epsilon: float) -> tuple[float, ...]:
    """Theorem 2: with ``Lap(Delta_f/eps)`` on every coefficient, party k gets ``eps^(k) = Delta_f^k/Delta_f eps``."""
    eps = _check_epsilon(epsilon)
    total = global_sensitivity(objective, party_l1, label_party)
    if total == 0:
        raise ParameterError(explain("party_l1", party_l1, "at least one non-zero bound",
                                     "give the parties some columns"))
    return tuple(party_sensitivity(objective, party_l1, label_party, k) / total * eps
                 for k in range(len(party_l1)))


def _group_budgets(single: Sequence[float], cross: Mapping[tuple[int, int], float],
                   ) -> tuple[tuple[float, ...], dict[tuple[int, int], float]]:
    singles = tuple(_check_epsilon(e, f"epsilon^{k}") for k, e in enumerate(single))
    pairs: dict[tuple[int, int], float] = {}
    for (k, l), e in cross.items():  # noqa: E741
        key = (min(k, l), max(k, l))
        if k == l or not (0 <= key[0] and key[1] < len(singles)):
            raise ParameterError(explain("cross budget pair", (k, l), f"two different parties in [0, {len(singles)})",
                                         "key cross budgets by (k, l) with k != l"))
        if key in pairs:
            raise ParameterError(explain("cross budget pair", (k, l), "each pair once",
                                         "parties k and l agree on one eps^kl"))
        pairs[key] = _check_epsilon(e, f"epsilon^{key[0]}{key[1]}")
    return singles, pairs


def bottom_up_epsilon(single: Sequence[float], cross: Mapping[tuple[int, int], float]) -> float:
    """The guarantee on D in the bottom-up case: ``sum_k eps^k + sum_{k<l} eps^kl`` (sequential composition).

    ``single[k]`` is party k's budget for its single-party block, ``cross[(k, l)]`` the budget k and l agreed
    for their cross-party block (noise ``Lap(Delta_h^kl / eps^kl)``). Pairs with no cross coefficients may be
    omitted. Tighter than Corollary 1 (:func:`corollary1_epsilon`); see the module docstring.
    """
    singles, pairs = _group_budgets(single, cross)
    return sum(singles) + sum(pairs.values())


def bottom_up_party_epsilons(single: Sequence[float], cross: Mapping[tuple[int, int], float],
                             ) -> tuple[float, ...]:
    """Each party's own guarantee in the bottom-up case: ``eps^(k) = eps^k + sum_l eps^kl``."""
    singles, pairs = _group_budgets(single, cross)
    return tuple(singles[k] + sum(e for pair, e in pairs.items() if k in pair) for k in range(len(singles)))


def corollary1_epsilon(objective: FMObjective, party_l1: Sequence[float], label_party: int,
                       single: Sequence[float], cross: Mapping[tuple[int, int], float]) -> float:
    """Paper 000's Corollary 1, ``sum_k Delta_f/Delta_g^k eps^k + sum_kl Delta_f/Delta_h^kl eps^kl``, as printed.

    Valid but loose (it over-reports the budget); kept for comparison with :func:`bottom_up_epsilon`. Groups
    whose sensitivity is 0 (no coefficients) contribute nothing.
    """
    singles, pairs = _group_budgets(single, cross)
    total = global_sensitivity(objective, party_l1, label_party)
    out = 0.0
    for k, e in enumerate(singles):
        g = single_party_sensitivity(objective, party_l1, label_party, k)
        out += total / g * e if g > 0 else 0.0
    for (k, l), e in pairs.items():  # noqa: E741
        h = cross_party_sensitivity(objective, party_l1, label_party, k, l)
        out += total / h * e if h > 0 else 0.0
    return out
