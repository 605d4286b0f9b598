"""Paper 003: distributed ERM with the noise made inside the secure computation (MPC Out P, MPC Grad P).

Jayaraman, Wang, Evans, Gu, "Distributed Learning without Distress: Privacy-Preserving Empirical Risk
Minimization" (NeurIPS 2018; :data:`mpdp.learning.papers.PAPERS`): sections 3.1-3.2 (output and gradient
perturbation inside MPC), section 4 and Table 1 (the six methods' noise), Figures 1-2; zCDP accounting.

Where each part lives
---------------------
* :mod:`mpdp.learning.erm`: the plaintext losses, objective, solver and metrics every party computes on its rows;
* :mod:`mpdp.dp.sensitivities.erm`: the sensitivities of the minimiser and of the averaged gradient;
* :mod:`~mpdp.learning.distributed_erm.spec`: the six methods (:class:`~mpdp.learning.distributed_erm.spec.Method`),
  their options and defaults (the paper's setting), their specs;
* :mod:`~mpdp.learning.distributed_erm.problem`: the horizontal setting (parties' records, vectorised party
  groups, local computations, evaluation, the data's preparation and split);
* :mod:`~mpdp.learning.distributed_erm.common`: settings, results, noise calibration and accounting shared by
  the six methods, and how party groups become runtime parties (cohorts);
* :mod:`~mpdp.learning.distributed_erm.mpc`: the roles of MPC Out P, MPC Grad P and Pathak et al., noise
  generated inside MPC (:mod:`mpdp.protocols.noisy_aggregation`, :mod:`mpdp.protocols.noise`);
* :mod:`~mpdp.learning.distributed_erm.baselines`: the roles of Local Out P, Local Obj P, Local Grad P;
* :mod:`~mpdp.learning.distributed_erm.rounds`: each run written once (the parties, their order and roles, their
  random sources, each data party's charge, the privacy reported) and the in-memory fits ``fit_mpc_gradp`` ..;
* :mod:`~mpdp.learning.distributed_erm.deployment`: the parties run apart, ``mpdp run`` (in memory) and
  ``mpdp launch``, and the run's report;
* :mod:`~mpdp.learning.distributed_erm.estimator`: :class:`DistributedERMClassifier` and
  :class:`DistributedERMRegressor`, the six methods as scikit-learn estimators;
* :mod:`~mpdp.learning.distributed_erm.experiments`: ``mpdp reproduce 003-table1|003-fig1|003-fig2``.
"""

from typing import TYPE_CHECKING, Any

from mpdp.learning.distributed_erm.common import DistributedFit, GradientPerturbation, OutputPerturbation
from mpdp.learning.distributed_erm.problem import ERMProblem, HorizontalParties
from mpdp.learning.distributed_erm.rounds import (
    fit_local_gradp,
    fit_local_objp,
    fit_local_outp,
    fit_mpc_gradp,
    fit_mpc_outp,
    fit_pathak,
)
from mpdp.learning.distributed_erm.spec import Method

if TYPE_CHECKING:  # what the lazy exports below return, for type checkers and the docs
    from mpdp.learning.distributed_erm.estimator import DistributedERMClassifier, DistributedERMRegressor

__all__ = ["DistributedERMClassifier", "DistributedERMRegressor", "DistributedFit", "ERMProblem",
           "GradientPerturbation", "HorizontalParties", "Method", "OutputPerturbation", "fit_local_gradp",
           "fit_local_objp", "fit_local_outp", "fit_mpc_gradp", "fit_mpc_outp", "fit_pathak"]


def __getattr__(name: str) -> Any:
    """The scikit-learn estimators, imported on first use: a party process running this
    paper's roles need not import scikit-learn."""
    if name == "DistributedERMClassifier":
        from mpdp.learning.distributed_erm.estimator import DistributedERMClassifier

        return DistributedERMClassifier
    if name == "DistributedERMRegressor":
        from mpdp.learning.distributed_erm.estimator import DistributedERMRegressor

        return DistributedERMRegressor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
