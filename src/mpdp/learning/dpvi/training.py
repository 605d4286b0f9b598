"""The DPVI training loop shared by every party and by the non-partitioned baseline (paper 002, Algorithm 1).

One step (Jälkö et al. 2017; paper 002 sections 2.2.2 and 4):

1. draw ``theta = mu + exp(omega) eta`` from *public* randomness (every party draws the same);
2. take a minibatch: Poisson sampling at rate ``q = batch_size / n`` (what the subsampled-Gaussian accountants
   assume), or, with ``batching="disjoint"``, each epoch assigns every record to one of ``round(n / batch_size)``
   minibatches uniformly at random (the paper's remedy for party-side privacy: a record is used once per epoch);
3. ``step(theta, batch)`` returns the noisy sum of clipped per-example gradients of ``log p(x_i | theta)``
   (computed in the clear by :class:`FloatStep` for the non-partitioned baseline, under MPC by the parties);
4. ``g = noisy / q + grad log prior`` and the ELBO gradients of
   :class:`~mpdp.learning.dpvi.variational.MeanFieldGaussian`, then an Adam ascent step.

Everything but step 3 is public: the parties run this loop in lockstep on identical public state, and the
noisy sums are the only thing that depends on the data.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from scipy import special

from mpdp.dp.grid import snap_to_grid
from mpdp.dp.samplers import discrete_gaussian
from mpdp.errors import ParameterError, ShapeMismatchError, explain
from mpdp.learning.dpvi.emulation import PartitionedResponsibilities
from mpdp.learning.dpvi.features import EncodedBlock
from mpdp.learning.dpvi.mixture import FeatureBlock, MixtureModel
from mpdp.learning.dpvi.variational import Adam, AdamSettings, MeanFieldGaussian
from mpdp.progress import SILENT, Progress
from mpdp.randomness import RandomSource

__all__ = ["BATCHING", "BatchPlan", "DPVISettings", "FloatStep", "Trace", "per_example_gradients", "train"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Step = Callable[[FloatArray, IntArray], FloatArray]

BATCHING = ("poisson", "disjoint")


@dataclass(frozen=True)
class DPVISettings:
    """Optimisation and DP-SGD settings (the privacy budget is calibrated separately, into ``noise_multiplier``).

    Parameters
    ----------
    epochs:
        Passes over the data (paper 002 Figure 2: 3000 steps of 100 records, about 33 epochs).
    batch_size:
        Expected minibatch size ``B`` (paper 002: 100); ``q = B / n``.
    clip:
        ``C``: every record's whole gradient is clipped to L2 norm ``C``.
    noise_multiplier:
        ``z``: the noise on each sum has standard deviation ``z C``. 0 trains without noise (not private).
    batching:
        ``"poisson"`` or ``"disjoint"`` (see the module docstring).
    adam:
        Optimiser settings.
    init_mu_scale, init_std:
        Initial posterior: ``mu ~ N(0, init_mu_scale^2)`` from public randomness, ``exp(omega) = init_std``.
    """

    epochs: int = 33
    batch_size: int = 100
    clip: float = 2.0
    noise_multiplier: float = 1.0
    batching: str = "poisson"
    adam: AdamSettings = field(default_factory=lambda: AdamSettings(learning_rate=0.01))
    init_mu_scale: float = 0.5
    init_std: float = 0.05

    def __post_init__(self) -> None:
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, int) or self.epochs < 1:
            raise ParameterError(explain("epochs", self.epochs, "an int >= 1", "pass e.g. epochs=33"))
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ParameterError(explain("batch_size", self.batch_size, "an int >= 1", "pass e.g. batch_size=100"))
        if not (math.isfinite(self.clip) and self.clip > 0):
            raise ParameterError(explain("clip", self.clip, "a finite number > 0", "pass e.g. clip=2.0"))
        if not (math.isfinite(self.noise_multiplier) and self.noise_multiplier >= 0):
            raise ParameterError(explain("noise_multiplier", self.noise_multiplier, "a finite number >= 0",
                                         "calibrate it with mpdp.learning.dpvi.privacy"))
        if self.batching not in BATCHING:
            raise ParameterError(explain("batching", self.batching, f"one of {BATCHING}", "pass batching='poisson'"))
        if not (self.init_mu_scale >= 0 and self.init_std > 0):
            raise ParameterError(explain("(init_mu_scale, init_std)", (self.init_mu_scale, self.init_std),
                                         "init_mu_scale >= 0 and init_std > 0", "pass e.g. 0.5 and 0.05"))


@dataclass(frozen=True)
class BatchPlan:
    """How ``n`` records are visited: sampling rate, steps per epoch and in total."""

    n: int
    batch_size: int
    epochs: int
    batching: str

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ParameterError(explain("n", self.n, "an int >= 1", "train on at least one record"))
        if self.batch_size > self.n:
            raise ParameterError(explain("batch_size", self.batch_size, f"at most the {self.n} training records",
                                         "use a smaller batch_size (or more data)"))
        if self.batching not in BATCHING:
            raise ParameterError(explain("batching", self.batching, f"one of {BATCHING}", "pass 'poisson'"))

    @classmethod
    def of(cls, n: int, settings: DPVISettings) -> BatchPlan:
        return cls(n, settings.batch_size, settings.epochs, settings.batching)

    @property
    def steps_per_epoch(self) -> int:
        return max(1, round(self.n / self.batch_size))

    @property
    def steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    @property
    def sampling_rate(self) -> float:
        """``q``: Poisson rate, or one over the number of disjoint batches."""
        return self.batch_size / self.n if self.batching == "poisson" else 1.0 / self.steps_per_epoch

    def batches(self, rng: RandomSource) -> Iterator[IntArray]:
        """The minibatches of every step, from public randomness.

        Poisson: each record joins a step's minibatch independently with probability at most ``q =
        sampling_rate``, within ``2^-64`` of it (:meth:`~mpdp.randomness.RandomSource.bernoulli`); the
        subsampled Gaussian's privacy loss grows with the rate, so the epsilon accounted at ``q`` bounds the
        true one. A float test ``random(n) < q`` reads the same words and disagrees on a record with
        probability below ``2^-53``."""
        per = self.steps_per_epoch
        for epoch in range(self.epochs):
            source = rng.spawn(f"epoch/{epoch}")
            if self.batching == "poisson":
                for _ in range(per):
                    yield np.flatnonzero(source.bernoulli(self.n, self.sampling_rate)).astype(np.int64)
            else:
                slot = source.integers(0, per, self.n)
                order = np.argsort(slot, kind="stable")
                bounds = np.searchsorted(slot[order], np.arange(per + 1))
                for b in range(per):
                    yield np.sort(order[bounds[b]:bounds[b + 1]]).astype(np.int64)


@dataclass
class Trace:
    """What training leaves behind: the posterior after every epoch and the time of every step."""

    epochs: list[MeanFieldGaussian] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)


def train(model: MixtureModel, settings: DPVISettings, plan: BatchPlan, step: Step, *,
          rng: RandomSource, on_epoch: Callable[[int, MeanFieldGaussian], None] | None = None,
          ahead: Callable[[int | None], None] | None = None,
          progress: Progress = SILENT) -> tuple[MeanFieldGaussian, Trace]:
    """Run DPVI; ``rng`` is *public* randomness (initialisation, minibatches, ``eta``), the same at every party.
    ``progress`` shows a bar over the steps.

    ``ahead``, if given, is told the size of the minibatch after the one about to be stepped (``None`` before
    the last step), just before each step: the MPC parties request that step's correlations during this one
    (:meth:`~mpdp.learning.dpvi.parties.DataParty.secure_step`'s ``next_batch_size``). The minibatches are
    drawn one step early, from the same stream in the same order.
    """
    posterior = MeanFieldGaussian.initial(model.dim, rng=rng.spawn("init"), mu_scale=settings.init_mu_scale,
                                          std=settings.init_std)
    adam = Adam([(model.dim,), (model.dim,)], settings.adam)
    trace = Trace()
    q = plan.sampling_rate
    etas = rng.spawn("eta")
    # each minibatch with the size of the one after it (None after the last): the same stream, one step early
    batches, later = itertools.tee(plan.batches(rng.spawn("batches")))
    next_sizes = itertools.chain((int(b.size) for b in itertools.islice(later, 1, None)), [None])
    steps = progress.iterate(zip(batches, next_sizes, strict=True), f"steps ({plan.epochs} epochs)", total=plan.steps,
                             unit="step")
    for t, (batch, upcoming) in enumerate(steps):
        theta, eta = posterior.draw(etas)
        if ahead is not None:
            ahead(upcoming)
        start = time.perf_counter()
        noisy = step(theta, batch)
        trace.step_seconds.append(time.perf_counter() - start)
        trace.batch_sizes.append(int(batch.size))
        if noisy.shape != (model.dim,) or not np.all(np.isfinite(noisy)):
            raise ShapeMismatchError(explain("step result", noisy.shape, f"a finite vector of length {model.dim}",
                                             "return the noisy sum of clipped per-example gradients"))
        g = noisy / q + model.log_prior_grad(theta)
        g_mu, g_omega = posterior.elbo_grads(g, eta)
        adam.ascend([posterior.mu, posterior.omega], [g_mu, g_omega])
        if (t + 1) % plan.steps_per_epoch == 0:
            snapshot = posterior.copy()
            trace.epochs.append(snapshot)
            if on_epoch is not None:
                on_epoch(len(trace.epochs), snapshot)
    return posterior, trace


def per_example_gradients(model: MixtureModel, block: FeatureBlock, theta: FloatArray, data: EncodedBlock,
                          r: FloatArray | None = None) -> FloatArray:
    """Each record's whole gradient of ``log p(x_i | theta)``, shape ``(n, model.dim)`` (non-partitioned, float64).

    ``d/dbeta_k = r_ik - pi_k`` (k < K - 1) and ``d/dtheta_kf = r_ik g_ikf`` with responsibilities
    ``r = softmax_k(log pi_k + a_ik)`` computed by log-sum-exp, unless given (``(n, K)``: ablations, see
    :mod:`mpdp.learning.dpvi.emulation`).
    """
    if block.features != tuple(range(len(model.features))):
        raise ParameterError(explain("block", block.names, "every feature of the model", "use model.block()"))
    pi = model.weights(theta)
    if r is None:
        a = block.log_densities(theta, data) + np.log(pi)[None, :]
        r = np.exp(a - special.logsumexp(a, axis=1, keepdims=True))
    elif r.shape != (data.n, model.components):
        raise ShapeMismatchError(explain("r", r.shape, f"({data.n}, {model.components})", "one row per record"))
    g = block.per_example_grads(theta, data)
    out = np.zeros((data.n, model.dim))
    out[:, model.weights_slice] = (r - pi[None, :])[:, :-1]
    offset = 0
    for f, feature in enumerate(model.features):
        width = feature.n_params
        weighted = r[:, :, None] * g[:, :, offset:offset + width]
        out[:, model.slice(f)] = weighted.reshape(data.n, model.components * width)
        offset += width
    return out


class FloatStep:
    """The non-partitioned DPVI step in float64: per-example gradients, clipping, exact grid Gaussian noise.

    The sum is snapped to the grid ``2^-k`` and ``N_Z(0, (z C 2^k)^2)`` grid units are added
    (:mod:`mpdp.dp.grid`: the L2 sensitivity in grid units is ``C 2^k + sqrt(dim)``), drawn from ``rng`` (the
    data holder's own randomness). With ``noise_multiplier = 0`` and ``clip = None`` this is
    plain (non-private) stochastic VI. ``responsibilities`` (an ablation, :mod:`mpdp.learning.dpvi.emulation`)
    replaces the softmax by the partitioned step's responsibilities, and drops the records it says to.
    """

    def __init__(self, model: MixtureModel, values: npt.ArrayLike, *, clip: float | None, noise_multiplier: float,
                 grid_bits: int = 30, rng: RandomSource,
                 responsibilities: PartitionedResponsibilities | None = None) -> None:
        self.model = model
        self.block = model.block()
        self.data = self.block.encode(values)
        self._responsibilities = None if responsibilities is None else responsibilities.bind(model, values)
        if clip is not None and not clip > 0:
            raise ParameterError(explain("clip", clip, "None or a number > 0", "pass e.g. clip=2.0"))
        if noise_multiplier > 0 and clip is None:
            raise ParameterError(explain("clip", None, "a clipping bound when adding noise", "pass clip=C"))
        self.clip = clip
        self.noise_multiplier = float(noise_multiplier)
        self.grid_bits = grid_bits
        self.rng = rng

    @property
    def n(self) -> int:
        return self.data.n

    def __call__(self, theta: FloatArray, batch: IntArray) -> FloatArray:
        r, kept = (None, None) if self._responsibilities is None else self._responsibilities(theta, batch)
        grads = per_example_gradients(self.model, self.block, theta, self.data.rows(batch), r)
        if self.clip is not None:
            norms = np.sqrt(np.sum(grads * grads, axis=1))
            grads = grads * np.minimum(1.0, self.clip / np.maximum(norms, 1e-300))[:, None]
        if kept is not None:
            grads = grads * kept[:, None]
        total: FloatArray = grads.sum(axis=0)
        if self.noise_multiplier > 0 and self.clip is not None:
            # snapped to the grid first, then exact integer noise (mpdp.dp.grid): no floating-point noise
            sigma_units = Fraction(self.noise_multiplier) * Fraction(self.clip) * 2**self.grid_bits
            units = snap_to_grid(total, self.grid_bits) + np.asarray(
                discrete_gaussian(sigma_units**2, self.model.dim, rng=self.rng), dtype=np.int64)
            total = np.ldexp(units.astype(np.float64), -self.grid_bits)
        return total
