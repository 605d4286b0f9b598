"""Where a long DPVI training puts the MPC step's tail: ``python -m bench.probes.dpvi_tail [--seed S]``.

Trains the non-partitioned float64 DPVI with Figure 3's settings (Adult, K = 10, 33 epochs, batch 100, clip 2,
learning rate 0.01, the noise of eps = 1 at delta = 1e-5) and, at each epoch's posterior, plans the MPC step
(:meth:`~mpdp.learning.dpvi.parties.VerticalSetup.step_plan`) for ``--thetas`` draws: per epoch the clipping
domain's exponent ``H``, the clipping bound's loss ``1 - C'/C`` with the tail
:func:`~mpdp.protocols.mixture_gradient.plan_step` chose (median and largest) and how many draws it would run with
the tail in Z_2^128 (the Z_2^64 tail's loss above ``TAIL_MAX_CLIP_LOSS``). The float trajectory stands in for
the MPC one, which follows it within the noise. Figures for three seeds: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse

import numpy as np

from mpdp.datasets import load_dataset, train_test_split
from mpdp.learning.dpvi.experiments import adult_partition
from mpdp.learning.dpvi.model import DPVI, same_privacy_noise
from mpdp.learning.dpvi.parties import VerticalSetup
from mpdp.learning.dpvi.training import DPVISettings
from mpdp.protocols.mixture_gradient import GradientPrecision
from mpdp.randomness import RandomSource


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.probes.dpvi_tail", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", default="tail", help="the seed's text (default: tail)")
    parser.add_argument("--epochs", type=int, default=33)
    parser.add_argument("--thetas", type=int, default=20, help="draws planned per epoch")
    args = parser.parse_args(argv)
    rng = RandomSource.seeded(args.seed).spawn("rep/0")
    train, _ = train_test_split(load_dataset("adult"), 0.2, rng=rng.spawn("split"))  # as Figure 3's repetitions
    setting = {"components": 10, "epochs": args.epochs, "batch_size": 100, "clip": 2.0}
    z = same_privacy_noise(train, epsilon=1.0, delta=1e-5, **setting)
    fit = DPVI(rng=rng.spawn("root"), learning_rate=0.01, epsilon=None, noise_multiplier=z, delta=1e-5,
               public_seed=rng.spawn("public").bytes(32), **setting).fit(train)
    settings = DPVISettings(epochs=1, batch_size=100, clip=2.0, noise_multiplier=z)
    setup = VerticalSetup(fit.model_, ("a", "b"), adult_partition(train), train.n, settings)
    narrow = GradientPrecision().tail
    draws = rng.spawn("draws")
    print("epoch  H      loss median  loss max  wide")
    for epoch, posterior in enumerate(fit.trace_.epochs, start=1):
        plans = [setup.step_plan(posterior.draw(draws)[0], 100) for _ in range(args.thetas)]
        loss = np.array([1.0 - p.clip / settings.clip for p in plans])
        exps = sorted({p.clip_params.high_exp for p in plans})
        wide = sum(p.tail != narrow for p in plans)
        print(f"{epoch:5d}  {'/'.join(map(str, exps)):5s}  {np.median(loss):10.4%}  {loss.max():8.4%}  "
              f"{wide}/{len(plans)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
