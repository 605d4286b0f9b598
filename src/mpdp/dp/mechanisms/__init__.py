"""Mechanisms: keyword-only, validated parameters; each reports its :class:`PrivacyCost` as ``.cost``.

Every release method takes ``rng=`` (default fresh OS entropy; a seeded source triggers
:class:`~mpdp.errors.PrivacyLeakWarning`), ``ledger=`` (charged *before* noise is drawn) and ``label=``.
"""

from mpdp.dp.mechanisms.exponential import ExponentialMechanism
from mpdp.dp.mechanisms.gaussian import CALIBRATIONS, DiscreteGaussianMechanism, GaussianMechanism
from mpdp.dp.mechanisms.laplace import DiscreteLaplaceMechanism, LaplaceMechanism
from mpdp.dp.mechanisms.objective import ObjectivePerturbation, gamma_norm_noise

__all__ = [
    "CALIBRATIONS",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "ObjectivePerturbation",
    "gamma_norm_noise",
]
