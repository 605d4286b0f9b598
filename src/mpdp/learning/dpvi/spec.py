"""Paper 002's algorithm as a spec: ``dpvi`` (:mod:`mpdp.learning.spec`).

The default of ``epochs`` is the paper's: 3000 iterations of minibatches of 100 records, 33 epochs (section 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from mpdp.learning.spec import AlgorithmSpec, AuditHook, Ref, RoleInfo, Settings, option

__all__ = ["SPECS", "DPVIRunSettings"]


@dataclass(frozen=True)
class DPVIRunSettings(Settings):
    """``dpvi``'s options (the DP-SGD settings, the noise source, how the parties run)."""

    components: int = option(10, "mixture components K", low=1)
    epochs: int = option(33, "passes over the training data (the paper's 3000 iterations of 100 records)", low=1)
    batch: int | None = option(None, "expected minibatch size (none: min(100, training rows))", low=1)
    clip: float = option(2.0, "per-example clipping bound C of the whole gradient", low=0.0, low_open=True)
    lr: float = option(0.01, "Adam learning rate", low=0.0, low_open=True)
    noise: str = option("parties", "'parties' (distributed discrete Gaussian) or 'trusted' (a trusted noise party)",
                        choices=("parties", "trusted"))
    batching: str = option("poisson", "'poisson' or 'disjoint' (each epoch partitions the records)",
                           choices=("poisson", "disjoint"))
    accountant: str = option("ddg", "'ddg' (proven for the discrete noise) or 'gaussian' (the paper's)",
                             choices=("ddg", "gaussian"))
    renormalize: bool = option(True, "renormalization constants (false: paper 002 Figure 2's failure)")
    baseline: bool = option(True, "also train the non-partitioned float DPVI and non-private VI")
    runner: str = option("greenlets", "'greenlets' (every party in this thread), 'fork-services' (the dealer and any "
                         "noise party in processes of their own; faster only with a core to spare) or 'processes' "
                         "(every party forked)", choices=("greenlets", "fork-services", "processes"))


SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        name="dpvi", paper="002", partitioning="vertical", task="synthesis", settings=DPVIRunSettings,
        summary="DP variational inference of a Beta/Categorical mixture, vertical partition, under MPC "
                "(synthetic-data model)",
        driver=Ref("mpdp.learning.dpvi.experiments:run"), min_parties=2,
        roles=(RoleInfo("party0 .. party{P-1}", "one per attribute holder (--parties, --partition)",
                        "holds its attributes' values for every record; computes its factors and statistics"),
               RoleInfo("dealer", "1", "deals the MPC's correlated randomness"),
               RoleInfo("noise", "with --option noise=trusted", "the trusted noise party")),
        deployment=Ref("mpdp.deploy.algorithms.dpvi:DpviDeployment"),
        audits=(AuditHook("dpvi-step", Ref("mpdp.audit.cases.dpvi:dpvi_step_case"), 20_000),),
        release=Ref("mpdp.learning.release.build:mixture_of_dpvi"),
        estimator=Ref("mpdp.learning.dpvi.model:VerticalDPVI")),
)
