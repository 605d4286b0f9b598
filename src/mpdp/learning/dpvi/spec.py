"""Paper 002's algorithm as a spec: ``dpvi`` (:mod:`mpdp.learning.spec`).

The default length of a run is the paper's: 3000 iterations of minibatches of 100 records (section 6; 33 epochs of
its data set). On another data set the same 3000 iterations are ``ceil(3000 x batch / rows)`` epochs
(:func:`epochs_for`: 9 on Adult's 36,178 training rows), since the privacy cost and the noise grow with the number
of iterations, not of passes.
:class:`DPVIRunSettings` is the only place the options' defaults are written: the in-memory and deployed runs
read them from the run's configuration (:func:`settings_of`), the estimators
(:class:`~mpdp.learning.dpvi.model.VerticalDPVI`, :class:`~mpdp.learning.dpvi.model.DPVI`) take theirs from
:data:`DEFAULTS`, and the one data-dependent default, the minibatch size, is :func:`batch_size_for`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option
from mpdp.learning.spec.run import RunConfig

__all__ = ["DEFAULTS", "PAPER_BATCH", "PAPER_EPOCHS", "PAPER_ITERATIONS", "SPECS", "DPVIRunSettings", "batch_size_for",
           "epochs_for", "settings_of"]

#: paper 002's minibatch size (section 6): the default batch, or every record when there are fewer
PAPER_BATCH = 100
#: the paper's run: 3000 iterations of minibatches of 100 records (33 epochs of its data set)
PAPER_ITERATIONS = 3000
PAPER_EPOCHS = 33


@dataclass(frozen=True)
class DPVIRunSettings(Settings):
    """``dpvi``'s options (the DP-SGD settings, the noise source, how the parties run)."""

    components: int = option(10, "mixture components K", low=1)
    epochs: int | None = option(None, "passes over the training data (none: the paper's 3000 iterations, "
                                "ceil(3000 x batch / training rows) epochs)", low=1)
    batch: int | None = option(None, "expected minibatch size (none: min(100, training rows))", low=1)
    clip: float = option(2.0, "per-example clipping bound C of the whole gradient", low=0.0, low_open=True)
    lr: float = option(0.01, "Adam learning rate", low=0.0, low_open=True)
    noise: str = option("parties", "'parties' (distributed discrete Gaussian) or 'trusted' (a trusted noise party)",
                        choices=("parties", "trusted"))
    batching: str = option("poisson", "'poisson' or 'disjoint' (each epoch partitions the records)",
                           choices=("poisson", "disjoint"))
    accountant: str = option("ddg", "'ddg' (proven for the discrete noise) or 'gaussian' (the paper's)",
                             choices=("ddg", "gaussian"))
    functions: str = option("masked", "'masked' (exp, 1/x and 1/sqrt on masked wires: 10 online rounds a step) or "
                            "'circuit' (the series and Newton circuits; any ring)", choices=("masked", "circuit"))
    renormalize: bool = option(True, "renormalization constants (false: paper 002 Figure 2's failure)")
    baseline: bool = option(True, "also train the non-partitioned float DPVI and non-private VI")
    runner: str = option("greenlets", "'greenlets' (every party in this thread), 'fork-services' (the dealer and any "
                         "noise party in processes of their own; faster only with a core to spare) or 'processes' "
                         "(every party forked)", choices=("greenlets", "fork-services", "processes"))


#: every option at its default (the estimators' defaults)
DEFAULTS = DPVIRunSettings()


def batch_size_for(batch: int | None, n: int) -> int:
    """The expected minibatch size of a run on ``n`` records: ``batch``, or by default ``min(100, n)``."""
    return min(PAPER_BATCH, n) if batch is None else batch


def epochs_for(epochs: int | None, batch: int | None, n: int) -> int:
    """The epochs of a run on ``n`` records: ``epochs``, or by default the paper's 3000 iterations at the batch
    size (:func:`batch_size_for`), ``ceil(3000 x batch / n)``."""
    if epochs is not None:
        return epochs
    return max(1, math.ceil(PAPER_ITERATIONS * batch_size_for(batch, n) / max(n, 1)))


def settings_of(config: RunConfig) -> DPVIRunSettings:
    """The run's options: ``config.settings``, or built from ``config.options`` when the caller gave only those
    (checked the same way)."""
    return DPVIRunSettings.of_run(config.settings, config.options)


SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        name="dpvi", paper="002", partitioning="vertical", task="synthesis", settings=DPVIRunSettings,
        summary="DP variational inference of a Beta/Categorical mixture, vertical partition, under MPC "
                "(synthetic-data model)",
        min_parties=2,
        roles=(RoleInfo("party0 .. party{P-1}", "one per attribute holder (--parties, --partition)",
                        "holds its attributes' values for every record; computes its factors and statistics"),
               RoleInfo("dealer", "1", "deals the MPC's correlated randomness"),
               RoleInfo("noise", "with --option noise=trusted", "the trusted noise party")),
        deployment=Ref("mpdp.learning.dpvi.deployment:DpviDeployment"),
        audits=(AuditHook("dpvi-step", Ref("mpdp.audit.cases.dpvi:dpvi_step_case"), 20_000),),
        release=Ref("mpdp.learning.release.build:mixture_of_dpvi"),
        estimator=Ref("mpdp.learning.dpvi.model:VerticalDPVI")),
)
