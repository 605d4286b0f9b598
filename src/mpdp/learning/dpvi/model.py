"""DP variational inference of a mixture model on vertically partitioned data, under real MPC (paper 002).

Implements Tajeddine, Jälkö, Kaski, Honkela, "Privacy-preserving Data Sharing on Vertically Partitioned Data"
(arXiv 2020; :data:`mpdp.learning.papers.PAPERS`): the mixture model of sections 4.2 and 6.1, DPVI with
DP-SGD (sections 2.2.2, 4.1, 4.3, Algorithm 1), the MPC combination with renormalization constants
(sections 4.4-4.5, Algorithms 2-4), the privacy guarantees towards the analyst and towards the parties
(section 5, Theorems 5.1-5.4) and synthetic data from the learned model (section 1).

Deviations from the paper, each sound
-------------------------------------
* The noise is a discrete Gaussian on the grid ``2^-b`` (exactly sampled), and the default accountant is the one
  proven for it (:mod:`mpdp.learning.dpvi.privacy`); the paper's continuous-Gaussian accounting is an option.
* Minibatches are Poisson samples (what the subsampled accountants assume), not fixed-size batches; an empty
  minibatch still releases noise.
* The fixed-point computation clips to a slightly smaller constant ``C'`` so that the *computed* release has
  sensitivity ``C`` despite rounding (:func:`mpdp.dp.sensitivities.dpvi.mpc_clip_constant`).
* Only the gradient w.r.t. the sampled parameters is privatised; the ``omega`` gradient is its post-processing
  (same sample for the whole minibatch), so the noise covers both at the cost of one.
* The paper's Algorithm 4 floors each party's renormalized factors at ``2^(floor_log2 / P)`` so that the
  secure normalisation's domain (``S_i >= 2^floor_log2``) holds by construction. That floor biases the model
  (+3% final test NLL on Adult in float64 with identical noise): by default no factor is floored and a record
  whose ``S_i`` falls below the domain contributes nothing (``GradientPrecision(floor_factors=True)`` keeps
  the paper's floor; :class:`mpdp.protocols.mixture_gradient.GradientPrecision` gives the measurements).

Synthetic data and the releasing party's view
---------------------------------------------
:meth:`VerticalDPVI.synthesize` samples records from the mixture at the learned posterior. The posterior is
public to every data party (it is a function of the released noisy sums) and the sampling uses only fresh
randomness of whoever releases, not any party's data: the synthetic data is post-processing of the DP releases
and costs no further privacy. The releasing party therefore learns nothing beyond what training showed it:
its own attributes, the noisy sums, and (with distributed noise) its own noise shares.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset
from mpdp.datasets.encoding import make_dataset
from mpdp.dp.accounting.cost import BudgetSpender, PrivacyCost
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.dpvi.emulation import PartitionedResponsibilities
from mpdp.learning.dpvi.mixture import MixtureModel, adult_model
from mpdp.learning.dpvi.parties import NOISE_SOURCES, PartyOutcome, VerticalSetup, roles
from mpdp.learning.dpvi.privacy import (
    ACCOUNTANTS,
    Privacy,
    analyst_cost,
    analyst_epsilon,
    calibrate_noise_multiplier,
    party_cost,
    party_epsilon,
)
from mpdp.learning.dpvi.spec import DEFAULTS, PAPER_BATCH, DPVIRunSettings, batch_size_for, epochs_for
from mpdp.learning.dpvi.training import BatchPlan, DPVISettings, FloatStep, Trace, train
from mpdp.learning.dpvi.variational import AdamSettings, MeanFieldGaussian
from mpdp.learning.estimator import PrivateEstimator
from mpdp.progress import SILENT, Progress
from mpdp.protocols.mixture_gradient import GradientPrecision
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime import run_protocol
from mpdp.runtime.mixed import can_fork

__all__ = ["DPVI", "VerticalDPVI", "default_model", "same_privacy_noise"]

FloatArray = npt.NDArray[np.float64]


def default_model(data: Dataset, components: int = 10) -> MixtureModel:
    """Paper 002's Adult model for Adult (:func:`~mpdp.learning.dpvi.mixture.adult_model`), else Beta for every
    numeric and Categorical for every categorical attribute (and the label)."""
    if data.name == "adult":
        return adult_model(data, components=components)
    return MixtureModel.from_dataset(data, components=components)


def same_privacy_noise(data: Dataset, *, epsilon: float, delta: float, components: int = DEFAULTS.components,
                       epochs: int | None = DEFAULTS.epochs, batch_size: int | None = DEFAULTS.batch,
                       clip: float = DEFAULTS.clip, batching: str = DEFAULTS.batching, grid_bits: int = 30,
                       accountant: str = DEFAULTS.accountant) -> float:
    """One noise multiplier giving both :class:`DPVI` (snapped float sum) and :class:`VerticalDPVI` (either
    noise source) at most ``epsilon`` towards the analyst: calibrated for the float run, whose snapping makes
    it the most expensive. Pass it to both (with the same ``rng`` and ``public_seed``) to compare them at the
    same privacy; with ``noise="trusted"`` they then add identical noise. Defaults: the spec's
    (``batch_size=None``: :func:`~mpdp.learning.dpvi.spec.batch_size_for`)."""
    model = default_model(data, components)
    plan = BatchPlan(data.n, batch_size_for(batch_size, data.n), epochs_for(epochs, batch_size, data.n), batching)
    return calibrate_noise_multiplier(epsilon=epsilon, delta=delta, plan=plan, dim=model.dim, clip=clip,
                                      grid_bits=grid_bits, accountant=accountant, snapped=True)


class _Base(PrivateEstimator):
    """Shared configuration, privacy bookkeeping, scoring and synthesis.

    A scikit-learn estimator (:mod:`mpdp.learning.estimator`: ``get_params``/``set_params``, ``clone`` keeps the
    ledgers and gives the clone a child ``rng``). ``fit`` takes a :class:`~mpdp.datasets.Dataset` (the typed
    attribute view the mixture needs), not an array, so scikit-learn's index-based splitters do not apply:
    cross-validate with :func:`mpdp.datasets.kfold`. ``score(data)`` is the mean log-likelihood per record
    (higher is better), ``-nll(data)``.

    The parameters that are options of the ``dpvi`` spec (``components``, ``epochs``, ``batch_size`` = ``batch``,
    ``clip``, ``learning_rate`` = ``lr``, ``batching``, ``accountant``; :class:`VerticalDPVI` adds ``noise``,
    ``precision.renormalize`` and the runner) default to the spec's defaults and are checked by its settings
    (:meth:`spec_settings`), with the same typed errors as ``--option``. ``batch_size=None``: ``min(100, n)``
    (:func:`~mpdp.learning.dpvi.spec.batch_size_for`).
    """

    def __init__(self, *, components: int = DEFAULTS.components, epsilon: float | None = 1.0, delta: float = 1e-5,
                 epochs: int | None = DEFAULTS.epochs, batch_size: int | None = DEFAULTS.batch,
                 clip: float = DEFAULTS.clip, learning_rate: float = DEFAULTS.lr, batching: str = DEFAULTS.batching,
                 accountant: str = DEFAULTS.accountant, noise_multiplier: float | None = None, grid_bits: int = 30,
                 model: MixtureModel | None = None, public_seed: bytes | None = None,
                 ledger: BudgetSpender | None = None, rng: RandomSource | None = None) -> None:
        if accountant not in ACCOUNTANTS:
            raise ParameterError(explain("accountant", accountant, f"one of {ACCOUNTANTS}", "pass 'ddg'"))
        if (epsilon is None) == (noise_multiplier is None):
            raise ParameterError(explain("(epsilon, noise_multiplier)", (epsilon, noise_multiplier),
                                         "exactly one of them", "give a privacy target or a noise multiplier "
                                         "(noise_multiplier=0: not private)"))
        self.components = components
        self.epsilon = epsilon
        self.delta = delta
        self.epochs = epochs
        self.batch_size = batch_size
        self.clip = clip
        self.learning_rate = learning_rate
        self.batching = batching
        self.accountant = accountant
        self.noise_multiplier = noise_multiplier
        self.grid_bits = grid_bits
        self.model = model
        self.public_seed = public_seed
        self.ledger = ledger
        self.rng = rng

    def spec_settings(self) -> DPVIRunSettings:
        """The parameters that are options of the spec, checked by its settings (class docstring)."""
        return DPVIRunSettings.from_options(self._spec_options(), source=type(self).__name__)

    def _spec_options(self) -> dict[str, Any]:
        return {"components": self.components, "epochs": self.epochs, "batch": self.batch_size, "clip": self.clip,
                "lr": self.learning_rate, "batching": self.batching, "accountant": self.accountant}

    def _validate(self) -> None:
        """Check the options at construction (any record count resolves the batch for the check)."""
        self.settings_for(PAPER_BATCH)

    def settings_for(self, n: int) -> DPVISettings:
        """The DP-SGD settings of a fit on ``n`` records (noise multiplier 0: the fit calibrates it)."""
        options = self.spec_settings()
        return DPVISettings(epochs=epochs_for(options.epochs, options.batch, n),
                            batch_size=batch_size_for(options.batch, n), clip=options.clip,
                            noise_multiplier=0.0, batching=options.batching,
                            adam=AdamSettings(learning_rate=options.lr))

    def score(self, data: Dataset, y: Any = None) -> float:
        """Mean log-likelihood per record of ``data`` (``-nll(data)``; higher is better)."""
        return -self.nll(data)

    # -- set by fit -------------------------------------------------------------------------------------------
    model_: MixtureModel
    posterior_: MeanFieldGaussian
    trace_: Trace
    privacy_: Privacy
    seconds_: float
    source_: Dataset

    def _model_for(self, data: Dataset) -> MixtureModel:
        return self.model if self.model is not None else default_model(data, self.components)

    def _noise_multiplier(self, plan: BatchPlan, dim: int, contributors: int, snapped: bool = False) -> float:
        if self.noise_multiplier is not None:
            return float(self.noise_multiplier)
        if self.epsilon is None:  # pragma: no cover - excluded in __init__
            raise ParameterError("no privacy target")
        return calibrate_noise_multiplier(epsilon=self.epsilon, delta=self.delta, plan=plan, dim=dim,
                                          clip=self.spec_settings().clip, grid_bits=self.grid_bits,
                                          noise_contributors=contributors, accountant=self.accountant,
                                          snapped=snapped)

    def _charge(self, privacy: Privacy, party_ledgers: Mapping[str, BudgetSpender] | None = None) -> None:
        """Record the releases before they happen (the ledgers refuse an overspend, recording nothing)."""
        label = f"dpvi/{privacy.noise}/{privacy.batching}"
        if (self.ledger is not None or party_ledgers) and privacy.noise_multiplier == 0:
            raise ParameterError(explain("noise_multiplier", 0.0, "noise when a ledger is charged",
                                         "a run without noise is not private: drop the ledger or set epsilon"))
        charges: list[tuple[BudgetSpender, PrivacyCost]] = []
        if self.ledger is not None:
            charges.append((self.ledger, analyst_cost(privacy)))
        for name, spender in (party_ledgers or {}).items():
            charges.append((spender, party_cost(privacy, name)))
        # all or nothing where the keepers can tell in advance: a party's refusal must not leave the analyst's
        # ledger charged for a fit that never runs
        for spender, cost in charges:
            can_afford = getattr(spender, "can_afford", None)
            if callable(can_afford) and not can_afford(cost):
                spender.spend(cost, label=label)  # raises BudgetExceededError with the keeper's own message
        for spender, cost in charges:
            spender.spend(cost, label=label)

    def _check_fitted(self) -> None:
        if not hasattr(self, "posterior_"):
            raise ParameterError(explain("estimator", "not fitted", "a fitted estimator", "call fit(data) first"))

    # -- results --------------------------------------------------------------------------------------------------
    @property
    def theta_(self) -> FloatArray:
        """The point estimate used for scoring and synthesis: the posterior mean (unconstrained)."""
        self._check_fitted()
        return self.posterior_.mu

    def nll(self, data: Dataset, posterior: MeanFieldGaussian | None = None) -> float:
        """Mean negative log-likelihood per record of ``data`` under the mixture at the posterior mean."""
        self._check_fitted()
        theta = (posterior or self.posterior_).mu
        return float(-np.mean(self.model_.log_likelihood(theta, self.model_.values_of(data))))

    def nll_per_epoch(self, data: Dataset) -> list[float]:
        """Test NLL after every epoch (paper 002, Figures 2 and 3)."""
        self._check_fitted()
        values = self.model_.values_of(data)
        return [float(-np.mean(self.model_.log_likelihood(p.mu, values))) for p in self.trace_.epochs]

    def synthesize(self, n: int, *, rng: RandomSource | None = None) -> Dataset:
        """``n`` synthetic records from the learned mixture, as a :class:`Dataset` with the source's schema and
        types (each value within its attribute's domain: :meth:`~mpdp.datasets.dataset.Attribute.in_domain`).

        Post-processing of the DP releases (see the module docstring): no further privacy cost.
        """
        self._check_fitted()
        source = self.source_
        values = self.model_.sample(self.theta_, n, resolve(rng))
        names = self.model_.names
        attrs: list[Attribute] = []
        cols: list[FloatArray] = []
        for attr in source.attributes:
            if attr.name not in names:
                raise ShapeMismatchError(explain("attribute", attr.name, "a modelled attribute",
                                                 "model every attribute of the source"))
            attrs.append(attr)
            cols.append(attr.in_domain(values[:, names.index(attr.name)]))  # whole numbers for an integer one
        y = values[:, names.index(source.label_name)] if source.label_name in names else np.zeros(n)
        return make_dataset(f"{source.name}-synthetic", attrs, np.column_stack(cols) if cols else np.zeros((n, 0)),
                            y, task=source.task, label_name=source.label_name, groups=dict(source.groups))


def _outcome(result: object) -> PartyOutcome:
    """A data party's outcome, rebuilt from its wire form when the party ran in its own process."""
    return result if isinstance(result, PartyOutcome) else PartyOutcome.from_wire(result)


class VerticalDPVI(_Base):
    """DPVI on vertically partitioned data with the combination under MPC (real shares, in-memory parties).

    Parameters
    ----------
    noise:
        ``"parties"`` (distributed discrete Gaussian) or ``"trusted"`` (a trusted noise party).
    precision:
        Formats and approximations of the secure step (:class:`~mpdp.protocols.mixture_gradient.GradientPrecision`);
        ``GradientPrecision(renormalize=False)`` is paper 002's Figure 2 failure mode.
    colluders:
        For the per-party guarantee: how many other parties a party may collude with.
    party_ledgers:
        Each party's budget keeper (:class:`~mpdp.dp.accounting.cost.BudgetSpender`, e.g. a privacy ledger),
        charged its VPDP epsilon before training; an overspend refuses the fit before any release.
    processes:
        Run every party (and the dealer) in its own forked OS process on this machine
        (``run_protocol(..., processes=True)``, Linux/macOS) instead of threads of this process: the parties
        compute in parallel, as on one machine each. Same seed, same posterior, bit for bit. By default the
        parties are greenlets of the calling thread, switched when one waits for a message
        (``run_protocol(..., cooperative=True)``, :mod:`mpdp.runtime.cooperative`): their work is Python and
        small arrays, which threads would run in turns on the GIL anyway, at the cost of a thread hand-over
        per message.
    fork_services:
        Keep the data parties as greenlets but fork the trusted dealer (and the trusted noise party, with
        ``noise="trusted"``) into processes of their own (``run_protocol(..., cooperative=True, forked=...)``,
        :mod:`mpdp.runtime.mixed`): the dealer computes the next step's correlations while the parties compute
        this one. Same seed, same posterior, bit for bit. It pays only when a core is free for the dealer
        (figures: ``bench/RESULTS.md``, dpvi): measure on your own machines before choosing it. Needs
        ``os.fork`` and a process running no other thread (not a notebook kernel's); not with ``processes=True``.
    components, epochs, batch_size, clip, learning_rate, batching, grid_bits, model:
        The model and DP-SGD settings shared with :class:`DPVI`
        (:class:`~mpdp.learning.dpvi.training.DPVISettings`).
    epsilon, delta:
        The target towards an outside analyst; the noise multiplier is calibrated to it. Or pass
        ``noise_multiplier`` instead (``0``: no noise, not private; for tests and the non-private reference).
    accountant:
        ``"ddg"`` (default, proven for discrete noise) or ``"gaussian"`` (the paper's).
    ledger:
        The analyst's budget keeper, charged epsilon before training (with ``party_ledgers``, an overspend
        refuses the fit before any release).
    public_seed:
        32 bytes all parties agree on for the public randomness (initialisation, minibatches, ``eta``); default:
        the first party draws it. The same seed given to :class:`DPVI` makes the baseline visit the same
        minibatches with the same samples.
    comparisons:
        How the step compares (:class:`~mpdp.protocols.mpc.MPCSession`): ``"circuit"`` (default, the least CPU),
        or ``"fss"``: one round per comparison with the dealer's DCF keys (two data parties), fewer rounds for
        more CPU and dealer traffic, for parties far apart (figures: ``bench/RESULTS.md``, dpvi).
    functions:
        How the step computes: ``"masked"`` (default), on masked wires with the dealer's tables and keys
        (:func:`~mpdp.protocols.mixture_gradient.masked_gradient_sum`: 10 online rounds instead of 34-36, no slower
        on the LAN model, far faster on the WAN model, about 4x the circuit step's CPU; two data parties, and steps
        whose parameters it does not hold run the circuit step), or ``"circuit"``: the circuit step, the least CPU
        (the faster option when every party runs in one process). Figures: ``bench/RESULTS.md``, dpvi.
    rng:
        Root randomness (parties' keys, shares, noise, the public seed); default fresh OS entropy.
    """

    def __init__(self, *, noise: str = DEFAULTS.noise, precision: GradientPrecision | None = None, colluders: int = 0,
                 party_names: Sequence[str] | None = None, party_ledgers: Mapping[str, BudgetSpender] | None = None,
                 processes: bool = False, fork_services: bool = False, comparisons: str = "circuit",
                 functions: str = DEFAULTS.functions, components: int = DEFAULTS.components,
                 epsilon: float | None = 1.0, delta: float = 1e-5, epochs: int | None = DEFAULTS.epochs,
                 batch_size: int | None = DEFAULTS.batch,
                 clip: float = DEFAULTS.clip, learning_rate: float = DEFAULTS.lr, batching: str = DEFAULTS.batching,
                 accountant: str = DEFAULTS.accountant, noise_multiplier: float | None = None, grid_bits: int = 30,
                 model: MixtureModel | None = None, public_seed: bytes | None = None,
                 ledger: BudgetSpender | None = None, rng: RandomSource | None = None) -> None:
        super().__init__(components=components, epsilon=epsilon, delta=delta, epochs=epochs, batch_size=batch_size,
                         clip=clip, learning_rate=learning_rate, batching=batching, accountant=accountant,
                         noise_multiplier=noise_multiplier, grid_bits=grid_bits, model=model,
                         public_seed=public_seed, ledger=ledger, rng=rng)
        if comparisons not in ("circuit", "fss"):
            raise ParameterError(explain("comparisons", comparisons, "'circuit' or 'fss'",
                                         "pick how the MPC step compares"))
        self.comparisons = comparisons
        if functions not in ("circuit", "masked"):
            raise ParameterError(explain("functions", functions, "'circuit' or 'masked'",
                                         "pick how the MPC step computes"))
        self.functions = functions
        if processes and fork_services:
            raise ParameterError(explain("fork_services", True, "False with processes=True (every party is forked)",
                                         "pass one of processes=True or fork_services=True"))
        if fork_services and not hasattr(os, "fork"):
            raise ParameterError(explain("fork_services", True, "a platform with os.fork (Linux, macOS)",
                                         "pass fork_services=False: the parties run as greenlets"))
        if noise not in NOISE_SOURCES:
            raise ParameterError(explain("noise", noise, f"one of {NOISE_SOURCES}", "pass noise='parties'"))
        self.noise = noise
        self.precision = precision
        if self._precision.release_bits != self.grid_bits:
            raise ParameterError(explain("grid_bits", self.grid_bits, f"precision.release_bits = "
                                         f"{self._precision.release_bits}", "pass matching values"))
        self.colluders = colluders
        self.party_names = party_names
        self.party_ledgers = party_ledgers
        self.processes = processes
        self.fork_services = fork_services
        self._validate()

    def _spec_options(self) -> dict[str, Any]:
        runner = "processes" if self.processes else "fork-services" if self.fork_services else "greenlets"
        return {**super()._spec_options(), "noise": self.noise, "functions": self.functions,
                "renormalize": self._precision.renormalize,
                "runner": runner}

    @property
    def _precision(self) -> GradientPrecision:
        return self.precision or GradientPrecision(release_bits=self.grid_bits)

    communication_: dict[str, int]
    setup_: VerticalSetup

    def fit(self, data: Dataset, partition: Sequence[Sequence[str]], *, progress: Progress = SILENT) -> Self:
        """Train on ``data`` split between parties by attribute names (``partition[j]``: party ``j``'s features;
        the label, if modelled, goes with the group that names it). ``progress`` shows a bar over the steps."""
        start = time.perf_counter()
        model = self._model_for(data)
        setup, privacy = self.setup_for(model, data.n, partition)
        names, groups = setup.parties, setup.features
        values = [model.values_of(data, g) for g in groups]
        party_ledgers = dict(self.party_ledgers or {})
        unknown = set(party_ledgers) - set(names)
        if unknown:
            raise ParameterError(explain("party_ledgers", sorted(unknown), f"names among {names}", "key them by party"))
        self._charge(privacy, party_ledgers)
        protocol = roles(setup, values, progress=progress)
        forked = tuple(n for n in protocol if n not in names) if self.fork_services else ()
        if forked and not can_fork():
            raise ParameterError(explain("fork_services", True, "a fit from a process running one thread",
                                         f"this process runs {threading.active_count()} threads, and a fork would "
                                         "copy locks they hold: pass fork_services=False, or fit from a script"))
        run = run_protocol(protocol, rng=self._fit_source(), processes=self.processes,
                           cooperative=not self.processes, forked=forked)
        outcomes = [_outcome(run.results[p]) for p in names]
        return self.adopt(data, setup, privacy, outcomes, run.communication(), seconds=time.perf_counter() - start)

    def adopt(self, data: Dataset, setup: VerticalSetup, privacy: Privacy, outcomes: Sequence[PartyOutcome],
              communication: Mapping[str, int], *, seconds: float = 0.0) -> Self:
        """Take the data parties' ``outcomes`` of a run of ``setup`` on ``data`` (what :meth:`setup_for` gave,
        and ``privacy`` with it) as this estimator's fit: what :meth:`fit` does once its parties are done, and
        what the deployment's report does with the parties' results. Spends nothing (the run was charged)."""
        if len(outcomes) != len(setup.parties) or not outcomes:
            raise ShapeMismatchError(explain("outcomes", len(outcomes), f"one per data party ({len(setup.parties)})",
                                             "pass every data party's outcome"))
        for other in outcomes[1:]:
            if not np.array_equal(other.posterior.mu, outcomes[0].posterior.mu):  # pragma: no cover
                raise ShapeMismatchError("the parties ended with different posteriors; report this bug")
        self.model_, self.setup_ = setup.model, setup
        self.posterior_, self.trace_ = outcomes[0].posterior, outcomes[0].trace
        self.communication_ = dict(communication)
        self.source_ = data
        self.privacy_ = privacy
        self.seconds_ = seconds
        return self

    def setup_for(self, model: MixtureModel, n: int,
                  partition: Sequence[Sequence[str]]) -> tuple[VerticalSetup, Privacy]:
        """The public agreement of a fit of ``model`` on ``n`` aligned records split by ``partition``, and its
        privacy (what every party can work out without seeing anyone's data)."""
        groups = tuple(tuple(g) for g in partition)
        names = tuple(self.party_names) if self.party_names is not None else tuple(
            f"party{j}" for j in range(len(groups)))
        if len(names) != len(groups):
            raise ShapeMismatchError(explain("party_names", names, f"{len(groups)} names", "one name per group"))
        settings = self.settings_for(n)
        plan = BatchPlan.of(n, settings)
        contributors = len(groups) if self.noise == "parties" else 1
        z = self._noise_multiplier(plan, model.dim, contributors)
        settings = replace(settings, noise_multiplier=z)
        setup = VerticalSetup(model, names, groups, n, settings, precision=self._precision, noise=self.noise,
                              public_seed=self.public_seed, comparisons=self.comparisons, functions=self.functions)
        return setup, self._privacy(plan, model.dim, z, names)

    def _privacy(self, plan: BatchPlan, dim: int, z: float, names: Sequence[str]) -> Privacy:
        clip, bits, acc = self.spec_settings().clip, self.grid_bits, self.accountant
        eps = analyst_epsilon(noise_multiplier=z, plan=plan, delta=self.delta, dim=dim, clip=clip, grid_bits=bits,
                              noise_contributors=len(names) if self.noise == "parties" else 1, accountant=acc)
        per_party = {name: party_epsilon(noise_multiplier=z, plan=plan, delta=self.delta, dim=dim, clip=clip,
                                         grid_bits=bits, parties=len(names), noise=self.noise,
                                         colluders=self.colluders, accountant=acc) for name in names}
        return Privacy(epsilon=eps, delta=self.delta, noise_multiplier=z, per_party=per_party,
                       accountant=self.accountant, steps=plan.steps, sampling_rate=plan.sampling_rate,
                       batching=plan.batching, noise=self.noise)


class DPVI(_Base):
    """The same DPVI on non-partitioned data, in float64 (the baseline of paper 002, section 6.3).

    One data holder computes everything and adds the grid Gaussian noise itself; privacy towards the analyst
    only. Same parameters as :class:`VerticalDPVI` (without the MPC ones), plus ``responsibilities``: an
    ablation that trains with the partitioned step's responsibilities emulated in float64
    (:class:`~mpdp.learning.dpvi.emulation.PartitionedResponsibilities`, ``mpdp reproduce 002-floor``).
    """

    def __init__(self, *, responsibilities: PartitionedResponsibilities | None = None,
                 components: int = DEFAULTS.components, epsilon: float | None = 1.0, delta: float = 1e-5,
                 epochs: int | None = DEFAULTS.epochs, batch_size: int | None = DEFAULTS.batch,
                 clip: float = DEFAULTS.clip, learning_rate: float = DEFAULTS.lr, batching: str = DEFAULTS.batching,
                 accountant: str = DEFAULTS.accountant, noise_multiplier: float | None = None, grid_bits: int = 30,
                 model: MixtureModel | None = None, public_seed: bytes | None = None,
                 ledger: BudgetSpender | None = None, rng: RandomSource | None = None) -> None:
        super().__init__(components=components, epsilon=epsilon, delta=delta, epochs=epochs, batch_size=batch_size,
                         clip=clip, learning_rate=learning_rate, batching=batching, accountant=accountant,
                         noise_multiplier=noise_multiplier, grid_bits=grid_bits, model=model,
                         public_seed=public_seed, ledger=ledger, rng=rng)
        if responsibilities is not None and not isinstance(responsibilities, PartitionedResponsibilities):
            raise ParameterError(explain("responsibilities", responsibilities, "None or PartitionedResponsibilities",
                                         "pass PartitionedResponsibilities(groups, renormalization)"))
        self.responsibilities = responsibilities
        self._validate()

    def fit(self, data: Dataset, *, progress: Progress = SILENT) -> Self:
        """Train on ``data`` (one holder); ``progress`` shows a bar over the steps."""
        start = time.perf_counter()
        model = self._model_for(data)
        settings = self.settings_for(data.n)
        plan = BatchPlan.of(data.n, settings)
        z = self._noise_multiplier(plan, model.dim, 1, snapped=True)
        settings = replace(settings, noise_multiplier=z)
        eps = analyst_epsilon(noise_multiplier=z, plan=plan, delta=self.delta, dim=model.dim, clip=settings.clip,
                              grid_bits=self.grid_bits, accountant=self.accountant, snapped=True)
        privacy = Privacy(epsilon=eps, delta=self.delta, noise_multiplier=z, per_party={}, accountant=self.accountant,
                          steps=plan.steps, sampling_rate=plan.sampling_rate, batching=plan.batching, noise="holder")
        self._charge(privacy)
        root = self._fit_source()
        # the noise stream is the one a trusted noise party of a VerticalDPVI with the same rng draws from, so
        # that, seeded alike and with the same noise multiplier, both runs add identical noise
        step = FloatStep(model, model.values_of(data), clip=settings.clip, noise_multiplier=z,
                         grid_bits=self.grid_bits, rng=root.spawn("noise").spawn("dg"),
                         responsibilities=self.responsibilities)
        # initialisation, minibatches and eta: the holder's own randomness, or an agreed public seed (then the run
        # visits the same minibatches with the same samples as a VerticalDPVI with that seed)
        public = RandomSource.seeded(self.public_seed) if self.public_seed is not None else root.spawn("public")
        self.posterior_, self.trace_ = train(model, settings, plan, step, rng=public, progress=progress)
        self.model_ = model
        self.source_ = data
        self.privacy_ = privacy
        self.seconds_ = time.perf_counter() - start
        return self
