"""Paper 002: DP variational inference of a mixture model on vertically partitioned data, under MPC.

Tajeddine, Jälkö, Kaski, Honkela, "Privacy-preserving Data Sharing on Vertically Partitioned Data" (arXiv 2020;
:data:`mpdp.learning.papers.PAPERS`; the step's formulas are written out in :mod:`mpdp.protocols.mixture_gradient`):
the mixture model of sections 4.2 and 6.1,
DPVI with DP-SGD (sections 2.2.2, 4.1, 4.3, Algorithm 1), the MPC combination with renormalization constants
(sections 4.4-4.5, Algorithms 2-4), the guarantees towards the analyst and the parties (section 5, Theorems
5.1-5.4) and synthetic data from the learned model (section 1).

Where each part lives
---------------------
* :mod:`mpdp.learning.dpvi.mixture`: Beta/Categorical components, parameter layout, each party's local
  computations (log-densities, gradient norms, sufficient statistics);
* :mod:`mpdp.learning.dpvi.variational`: Gaussian mean-field posterior over unconstrained parameters, Adam;
* :mod:`mpdp.learning.dpvi.training`: the DPVI loop, minibatching, the non-partitioned float64 step;
* :mod:`mpdp.protocols.mixture_gradient`: the secure step (products across parties, secure division,
  clipping of the whole per-example gradient, assembly, noisy opening), on the engine of
  :mod:`mpdp.protocols.mpc` with real secret shares exchanged as messages;
* :mod:`mpdp.learning.dpvi.parties`: the data parties, dealer and trusted noise party;
* :mod:`mpdp.learning.dpvi.privacy` and :mod:`mpdp.dp.sensitivities.dpvi`: accounting and sensitivities;
* :mod:`~mpdp.learning.dpvi.tables`: every theta-derived table of the mixture, computed once per theta;
* :mod:`~mpdp.learning.dpvi.emulation`: the partitioned step's responsibilities in float64 (ablations);
* :mod:`~mpdp.learning.dpvi.model`: the estimators :class:`VerticalDPVI` (MPC) and :class:`DPVI`
  (non-partitioned float64 baseline);
* :mod:`~mpdp.learning.dpvi.spec`: the algorithm's spec and options (defaults written once);
* :mod:`~mpdp.learning.dpvi.deployment`: the parties of a run, their plan, privacy cost and report: what
  ``mpdp run dpvi`` runs in memory and ``mpdp launch`` one process each;
* :mod:`~mpdp.learning.dpvi.experiments`: ``mpdp reproduce 002-fig2|002-fig3|002-floor``.
"""

from mpdp.learning.dpvi.mixture import MixtureModel, adult_model
from mpdp.learning.dpvi.model import DPVI, VerticalDPVI

__all__ = ["DPVI", "MixtureModel", "VerticalDPVI", "adult_model"]
