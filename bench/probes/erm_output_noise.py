"""How paper 003's one-shot releases score on Adult over many noise draws:
``python -m bench.probes.erm_output_noise [--draws N] [--epsilon E] [--lam L] [-- run args]``.

``mpdp run pathak`` (or ``mpc-outp``, ``local-outp``) releases the average of the parties' local minimisers plus
Laplace noise; one seeded run is one draw. This probe builds ``mpdp run``'s split (Adult, 3 parties, seed 1 unless
told otherwise), computes the noiseless average once, and scores it with ``--draws`` fresh draws of each method's
calibrated noise (the scales the runs report: :meth:`~mpdp.learning.distributed_erm.rounds.Schedule.details`),
against the majority class and the non-private optimum. Figures: ``bench/RESULTS.md`` (erm).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from mpdp.cli import build_parser
from mpdp.cli.run_cmd import build_config
from mpdp.dp.grid import default_grid_bits, laplace_on_grid
from mpdp.learning.distributed_erm import HorizontalParties, Method
from mpdp.learning.distributed_erm.deployment import party_indices, run_settings
from mpdp.learning.distributed_erm.problem import prepare
from mpdp.learning.distributed_erm.rounds import Schedule, perturbation_of, setup_of
from mpdp.learning.distributed_erm.spec import ERMSettings
from mpdp.learning.registry import get_algorithm
from mpdp.randomness import RandomSource


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.probes.erm_output_noise",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--draws", type=int, default=200, help="noise draws per method (default 200)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--lam", type=float, default=ERMSettings().lam, help="regulariser (default: the spec's)")
    words = list(sys.argv[1:] if argv is None else argv)
    cut = words.index("--") if "--" in words else len(words)
    args = parser.parse_args(words[:cut])
    run_argv = ["run", Method.PATHAK.value, "--dataset", "adult", "--seed", "1", "--epsilon", str(args.epsilon),
                "--option", f"lam={args.lam}", *words[cut + 1:]]
    config = build_config(get_algorithm(Method.PATHAK), build_parser().parse_args(run_argv))
    data = prepare(config.train, config.test, lam=args.lam)
    parties = HorizontalParties.from_rows(data.X, data.y, party_indices(config), task=data.problem.task)
    minimisers = np.concatenate([group.local_minimizers(data.problem) for group in parties])
    average = minimisers.mean(axis=0)
    ev = data.evaluator
    majority = max(float(np.mean(ev.test_y > 0)), float(np.mean(ev.test_y < 0)))
    print(f"Adult, {parties.m} parties (n(1) = {parties.n_min}), d = {parties.d}, eps = {args.epsilon}, "
          f"lambda = {args.lam}: non-private {ev.metric_star:.4f}, noiseless average {ev.test_metric(average):.4f}, "
          f"majority class {majority:.4f}")
    rng = RandomSource.seeded("erm-output-noise")
    for method in (Method.PATHAK, Method.MPC_OUTP, Method.LOCAL_OUTP):
        settings = ERMSettings.from_options({"lam": args.lam}) if method.local else run_settings(config)
        schedule = Schedule(method, data.problem, perturbation_of(method, settings, args.epsilon, config.delta),
                            setup_of(settings), {"all": parties.m}, {"all": parties.n_min}, parties.d)
        details = schedule.details()
        source = rng.spawn(method)
        if method.local:  # every party's own noise, then the average
            b = details["laplace_scale_n1"]
            draws = [minimisers + laplace_on_grid(b, minimisers.shape, grid_bits=default_grid_bits(b),
                                                  rng=source.spawn(str(k))) for k in range(args.draws)]
            scores = np.array([ev.test_metric(d.mean(axis=0)) for d in draws])
        else:
            b = details["laplace_scale_of_average"]
            scores = np.array([ev.test_metric(average + laplace_on_grid(b, parties.d, grid_bits=default_grid_bits(b),
                                                                        rng=source.spawn(str(k))))
                               for k in range(args.draws)])
        print(f"{method.value:11s} Laplace scale {b:.3f}: accuracy mean {scores.mean():.4f}, median "
              f"{np.median(scores):.4f}, 10-90% {np.percentile(scores, 10):.4f}-{np.percentile(scores, 90):.4f}, "
              f"below the majority class in {np.mean(scores < majority):.0%} of {args.draws} draws")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
