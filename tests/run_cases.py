"""Every registered algorithm with small options: the seeded runs that tests compare across engines and commits.

``DATA`` and ``CASES[name]`` are the arguments of ``mpdp run`` (and ``mpdp launch``) after the algorithm's name.
A test checks that every registered algorithm has a case.
"""

from __future__ import annotations

DATA = ["--dataset", "synthetic-mixed:n=200", "--seed", "5"]
REGRESSION = ["--dataset", "synthetic-mixed:n=200,task=regression"]
ERM = ["--option", "cohort=1", "--parties", "2"]
GRADIENTS = ["--option", "T=3", *ERM]
PFDS = ["--parties", "3", "--option", "h_max=3", "--option", "eval_agents=2"]
#: every registered algorithm with small options (test_every_registered_algorithm_is_launched checks the list)
CASES: dict[str, list[str]] = {
    "fm-logistic": [],
    "fm-linear": [*REGRESSION, "--parties", "3"],
    "dpvi": ["--partition", "num0,num1;num2,num3,cat0,cat1,cat2", "--option", "epochs=1",
             "--option", "components=2", "--option", "baseline=false"],
    "ofpa": ["--option", "max_rounds=2", "--parties", "2"],
    "ofaa": ["--option", "noise=fresh", "--option", "max_rounds=3", "--parties", "2"],
    "pfds": PFDS, "pfds-s": PFDS, "pfds-minus": ["--parties", "2", "--option", "h_max=3"],
    "dp-pred": ["--parties", "2"], "np-agt": ["--parties", "3", "--option", "eval_agents=2"],
    **{m: ERM for m in ("pathak", "local-outp", "local-objp", "mpc-outp")},
    **{m: GRADIENTS for m in ("local-gradp", "mpc-gradp")},
    **{f"{m}-ridge": [*REGRESSION, *ERM] for m in ("pathak", "local-outp", "local-objp", "mpc-outp")},
    **{f"{m}-ridge": [*REGRESSION, *GRADIENTS] for m in ("local-gradp", "mpc-gradp")},
}
#: more seeded runs the in-memory engine must keep (defaults the deployment overrides: cohorts, noise drawn once)
MEMORY_ONLY: dict[str, list[str]] = {
    "mpc-gradp/cohorts": ["--option", "T=3", "--parties", "3"],
    "pathak/cohorts": ["--parties", "3"],
    "ofpa/once": ["--option", "max_rounds=3", "--parties", "3"],
    "dpvi/trusted": [*CASES["dpvi"], "--option", "noise=trusted"],
}
#: the fields of a run's record that must not change for the same seed
SAME = ("metric", "epsilon_spent", "delta_spent", "per_party_epsilon", "communication", "non_private", "parties")
