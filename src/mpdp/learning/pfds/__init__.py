"""Paper 004: PFDS, privacy-preserving federated data sharing with DP decision trees.

Fioretto, Van Hentenryck, "Privacy-Preserving Federated Data Sharing" (AAMAS 2019;
:data:`mpdp.learning.papers.PAPERS`): Algorithms 1-5 (the agents, SharePredictor, makeTree, ShareData,
optPrivateGen), Theorem 3.3, section 4's experiments (Table 2, Figure 3) and the baselines DP-Pred, PFDS(s), PFDS-.

Where each part lives
---------------------
* :mod:`~mpdp.learning.pfds.spec`: the five algorithms (``pfds``, ``pfds-s``, ``pfds-minus``, ``dp-pred``,
  ``np-agt``), their options with the paper's defaults, and each agent's privacy cost (Theorem 3.3);
* :mod:`~mpdp.learning.pfds.deployment`: the agents as parties, run in memory by ``mpdp run`` and one process
  each by ``mpdp launch``, and the analyst's report;
* :mod:`~mpdp.learning.pfds.domain`: the public data universe a tree partitions;
* :mod:`~mpdp.learning.pfds.tree_noise`: the DP-core calls (budget checks, exponential-mechanism choice with the
  Max operator, Laplace counts), in one place;
* :mod:`~mpdp.learning.pfds.tree`: makeTree (Algorithm 3) and the tree's predictor;
* :mod:`~mpdp.learning.pfds.consistency`: optPrivateGen (Algorithm 5), consistent leaf sizes and synthetic records;
* :mod:`~mpdp.learning.pfds.schema`: the public attribute schema and the ERM feature map;
* :mod:`~mpdp.learning.pfds.model`: the agents and their two message steps (Algorithms 1, 2 and 4), and
  :func:`~mpdp.learning.pfds.model.params_for`, which resolves the options' data-dependent defaults;
* :mod:`~mpdp.learning.pfds.scoring`: what an agent computes about itself for the experiments' errors
  (its test error after training, NP-Agt, a DP-Pred sharer's release);
* :mod:`~mpdp.learning.pfds.estimator`: :class:`PFDSClassifier`, the scikit-learn estimator (the released trees'
  vote as predictor, the released synthetic records as twin);
* :mod:`~mpdp.learning.pfds.fit`: an agent's training step (the paper's and mpdp's cross-validated one);
* :mod:`~mpdp.learning.pfds.baselines`: NP-Agt and DP-Pred;
* :mod:`~mpdp.learning.pfds.evaluation`: one train/test split evaluated for PFDS, its variants and the baselines;
* :mod:`~mpdp.learning.pfds.experiments`: ``mpdp reproduce 004-table2|004-fig3``;
* :mod:`mpdp.learning.data_fidelity`: how close synthetic data is to the real data (Figure 3).
"""

from typing import TYPE_CHECKING, Any

from mpdp.learning.pfds.model import PFDSAgent, PFDSParams, Schema
from mpdp.learning.pfds.tree import PrivateTree, TreeParams, make_tree

if TYPE_CHECKING:  # what the lazy exports below return, for type checkers and the docs
    from mpdp.learning.pfds.estimator import PFDSClassifier

__all__ = ["PFDSAgent", "PFDSClassifier", "PFDSParams", "PrivateTree", "Schema", "TreeParams", "make_tree"]


def __getattr__(name: str) -> Any:
    """The scikit-learn estimator, imported on first use: a party process running this
    paper's roles need not import scikit-learn."""
    if name == "PFDSClassifier":
        from mpdp.learning.pfds.estimator import PFDSClassifier

        return PFDSClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
