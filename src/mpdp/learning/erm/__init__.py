"""Regularised empirical risk minimisation: losses, objectives, a solver and plain metrics.

Where each part lives: :mod:`~mpdp.learning.erm.losses`, :mod:`~mpdp.learning.erm.data` (label and feature
conventions), :mod:`~mpdp.learning.erm.objective` (the objective and its solvers),
:mod:`~mpdp.learning.erm.metrics`; every public name is importable from this package.

Shared by the papers that train linear models (001, 003, 004). Everything here is plaintext maths on
one party's (or the union's) data; nothing here knows about parties, networks or privacy. The private
algorithms call these pieces on the data a party holds and take sensitivities from
:mod:`mpdp.dp.sensitivities.erm`.

The objective is the one of Chaudhuri, Monteleoni and Sarwate (JMLR 2011) and Jayaraman et al.
(``003``, section 3)::

    J(theta) = sum_i w_i * loss(<x_i, theta>, y_i) + (lam / 2) * ||theta||^2 + <b, theta>

with weights ``w_i`` summing to one (``1/n`` each by default; ``1/(m n_j)`` for party-averaged
objectives as in 003 section 3.2) and an optional linear term ``b`` (objective perturbation). The
regulariser ``N(theta) = ||theta||^2 / 2`` makes ``J`` ``lam``-strongly convex.

Losses are functions of the margin/prediction ``z = <x, theta>`` and the label:

================  ==============================================  ============  ================
loss              formula                                         G (||x||<=1)  L (||x||<=1)
================  ==============================================  ============  ================
logistic          log(1 + exp(-y z)), y in {-1, +1}               1             1/4
squared           (z - y)^2 / 2                                   unbounded     1
huber(c)          squared for |z - y| <= c, else c|z - y| - c^2/2  c             1
hinge             max(0, 1 - y z)                                 1             not smooth
smooth_hinge(h)   Chaudhuri's Huber hinge (below)                 1             1/(2h)
================  ==============================================  ============  ================

``huber(c)`` is ridge regression with each residual's influence capped at ``c``: it equals the squared
loss wherever ``|z - y| <= c`` and is the standard way to make ridge regression ``c``-Lipschitz, which the
output- and gradient-perturbation sensitivities need (the plain squared loss has no Lipschitz constant on
an unbounded parameter space).

References
----------
K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially private empirical risk minimization",
JMLR 12 (2011), sections 2-3 (losses, Huber hinge, Lipschitz/smoothness conditions).
B. Jayaraman, L. Wang, D. Evans, Q. Gu, "Distributed learning without distress", NeurIPS 2018 (paper 003,
:data:`mpdp.learning.papers.PAPERS`), section 3.
"""

from mpdp.learning.erm.data import add_intercept, require_unit_ball, to_pm1
from mpdp.learning.erm.losses import HingeLoss, HuberLoss, LogisticLoss, Loss, SmoothHingeLoss, SquaredLoss
from mpdp.learning.erm.metrics import accuracy, log_loss, misclassification, mse, predict
from mpdp.learning.erm.objective import Objective, Solution, solve, solve_batch

__all__ = [
    "HingeLoss",
    "HuberLoss",
    "LogisticLoss",
    "Loss",
    "Objective",
    "SmoothHingeLoss",
    "Solution",
    "SquaredLoss",
    "accuracy",
    "add_intercept",
    "log_loss",
    "misclassification",
    "mse",
    "predict",
    "require_unit_ball",
    "solve",
    "solve_batch",
    "to_pm1",
]
