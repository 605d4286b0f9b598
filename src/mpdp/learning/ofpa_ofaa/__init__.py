"""Paper 001: OFPA and OFAA, logistic regression over horizontally partitioned data owners.

Du, Li, Li, "Privacy-Preserving Multiparty Learning For Logistic Regression"
(SecureComm 2018; :data:`mpdp.learning.papers.PAPERS`): Algorithm 1 (output perturbation), Algorithm 2 (OFPA, objective
perturbation with a ``Lap(4/eps)`` linear term), Algorithm 3 (OFAA, per-degree Taylor-coefficient noise),
iterated record-weighted parameter averaging at a server through secure aggregation; Figures 2-4.

Where each part lives
---------------------
* :mod:`~mpdp.learning.ofpa_ofaa.spec`: what ``ofpa`` and ``ofaa`` are (options, defaults, parties, hooks);
* :mod:`mpdp.dp.sensitivities.ofpa_ofaa`: the sensitivities, and where the paper's are loose;
* :mod:`~mpdp.learning.ofpa_ofaa.parties`: a data owner's perturbed local objective and its minimiser;
* :mod:`~mpdp.learning.ofpa_ofaa.rounds`: the rounds, written once: roles, random-source labels, the stopping
  rule, run by every engine;
* :mod:`~mpdp.learning.ofpa_ofaa.model`: the run's settings (:class:`OfpaOfaaSettings`), each owner's charge
  (:func:`~mpdp.learning.ofpa_ofaa.model.owner_cost`) and the in-memory fit (:func:`fit`);
* :mod:`~mpdp.learning.ofpa_ofaa.deployment`: the parties as ``mpdp run`` and ``mpdp launch`` run them, and
  the analyst's report;
* :mod:`~mpdp.learning.ofpa_ofaa.estimator`: :class:`OfpaOfaaClassifier`, the scikit-learn estimator;
* :mod:`~mpdp.learning.ofpa_ofaa.experiments`: ``mpdp reproduce 001-fig2|3|4``.
"""

from typing import TYPE_CHECKING, Any

from mpdp.learning.ofpa_ofaa.model import (
    FitResult,
    OfpaOfaaSettings,
    PreparedParties,
    fit,
    prepare_parties,
    prepare_rows,
)

if TYPE_CHECKING:  # what the lazy exports below return, for type checkers and the docs
    from mpdp.learning.ofpa_ofaa.estimator import OfpaOfaaClassifier

__all__ = ["FitResult", "OfpaOfaaClassifier", "OfpaOfaaSettings", "PreparedParties", "fit", "prepare_parties",
           "prepare_rows"]


def __getattr__(name: str) -> Any:
    """The scikit-learn estimator, imported on first use: a party process running this
    paper's roles need not import scikit-learn."""
    if name == "OfpaOfaaClassifier":
        from mpdp.learning.ofpa_ofaa.estimator import OfpaOfaaClassifier

        return OfpaOfaaClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
