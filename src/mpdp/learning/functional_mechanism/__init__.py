"""Paper 000: the functional mechanism on vertically partitioned data (linear and logistic regression).

Xu, Yuan, Wu, "Achieving Differential Privacy in Vertically Partitioned Multiparty Learning"
(IEEE BigData 2021; :data:`mpdp.learning.papers.PAPERS`): Algorithm 1, Equations 2-7, Lemmas 1-2, Theorems 1-2, Claim 1,
Corollary 1, Tables 1-3; on top of the centralised functional mechanism of Zhang et al. (PVLDB 2012).

Where each part lives
---------------------
* :mod:`mpdp.dp.sensitivities.functional_mechanism`: Delta_f, Delta_f^k, Delta_g^k, Delta_h^kl (with the
  paper's linear per-party erratum);
* :mod:`mpdp.learning.functional_mechanism.objective`: the quadratic objective and its blocks (Equation 5);
* :mod:`mpdp.learning.functional_mechanism.noise`: the public plan, grid-exact Laplace noise, who adds which draw;
* :mod:`mpdp.learning.functional_mechanism.solver`: regularisation + spectral trimming (never an unbounded or NaN
  model);
* :mod:`mpdp.learning.functional_mechanism.parties`: the party roles (data parties, label party, honest-but-curious
  server) with cross-party coefficients from the secure inner products of :mod:`mpdp.protocols`;
* :mod:`mpdp.learning.functional_mechanism.release`: the server's sound solve of the released objective;
* :mod:`~mpdp.learning.functional_mechanism.model`: the centralised reference :func:`centralized_fm` and the
  sklearn-style estimators :class:`FMLogisticRegression`, :class:`FMLinearRegression`;
* :mod:`~mpdp.learning.functional_mechanism.spec`: the two algorithms' specs and options (defaults written once);
* :mod:`~mpdp.learning.functional_mechanism.deployment`: the parties of a run, their plan, privacy cost and
  report: what ``mpdp run fm-logistic|fm-linear`` runs in memory and ``mpdp launch`` one process each;
* :mod:`~mpdp.learning.functional_mechanism.experiments`: ``mpdp reproduce 000-table1|2|3``.
"""

from typing import TYPE_CHECKING, Any

from mpdp.learning.functional_mechanism.parties import run_vertical_fm
from mpdp.learning.functional_mechanism.release import FMResult, SolveSettings

if TYPE_CHECKING:  # what the lazy exports below return, for type checkers and the docs
    from mpdp.learning.functional_mechanism.model import FMLinearRegression, FMLogisticRegression, centralized_fm

__all__ = ["FMLinearRegression", "FMLogisticRegression", "FMResult", "SolveSettings", "centralized_fm",
           "run_vertical_fm"]

_MODEL = ("FMLinearRegression", "FMLogisticRegression", "centralized_fm")


def __getattr__(name: str) -> Any:
    """The estimators (and the centralised reference beside them), imported on first use: a deployed party's
    process runs the roles of :mod:`~mpdp.learning.functional_mechanism.parties` without scikit-learn."""
    if name in _MODEL:
        from mpdp.learning.functional_mechanism import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
