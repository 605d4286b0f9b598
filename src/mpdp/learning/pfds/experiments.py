"""Paper 004's tables and figures: ``mpdp reproduce 004-table2`` and ``mpdp reproduce 004-fig3``.

(``mpdp run pfds`` and its baselines run the agents of :mod:`mpdp.learning.pfds.deployment`.)

Datasets: the paper's Census Income is Adult (:func:`mpdp.datasets.load_adult`, 45,222 records). Its other
datasets (Default of credit card, Diabetes, Bike sharing, Online News Popularity) are not available here;
``004-table2`` substitutes a synthetic mixed-type classification task and a synthetic regression task
(:func:`mpdp.datasets.synthetic.mixed_tabular`) and says so in its notes. DiffGen (Figure 3) needs attribute
taxonomies that are not available either and is left out.

``004-table2`` reports two PFDS rows per setting from one protocol run: ``pfds (paper)``, the paper's fit,
and ``pfds (mpdp)``, each agent's cross-validated fit (:mod:`mpdp.learning.pfds.fit`); both are held to the
paper's PFDS figure. ``mpdp run pfds`` runs the mpdp fit unless given ``--option variant=paper``.

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), section 4 (Tables 1-2, Figures 3-4).
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from mpdp.datasets import load_adult
from mpdp.datasets.dataset import Dataset
from mpdp.datasets.partition import horizontal_by_anchors
from mpdp.datasets.splits import kfold_indices
from mpdp.datasets.synthetic import mixed_tabular
from mpdp.dp.accounting import PrivacyLedger
from mpdp.errors import ParameterError, PrivacyLeakWarning, explain
from mpdp.learning.data_fidelity import histogram_distance, size_error
from mpdp.learning.pfds.consistency import consistent_counts, integer_sizes, noisy_level_counts, synthesize
from mpdp.learning.pfds.evaluation import Setting, attribute_view, evaluate_split
from mpdp.learning.pfds.model import Schema, params_for
from mpdp.learning.pfds.spec import Method, PFDSSettings
from mpdp.learning.pfds.tree import make_tree
from mpdp.learning.registry import Reproduction, ReproFigure, ReproOptions, ReproRow, ReproTable
from mpdp.randomness import RandomSource

__all__ = ["PAPER_TABLE2", "REPRODUCTIONS", "fidelity", "reproduce_fig3", "reproduce_table2"]

_COLUMNS = (Method.NP_AGT, Method.DP_PRED, Method.PFDS_S, Method.PFDS)
#: Table 2's Census Income rows: (task, epsilon) -> {method: error}.
PAPER_TABLE2: dict[tuple[str, float], dict[str, float]] = {
    key: dict(zip(_COLUMNS, errors, strict=True)) for key, errors in {
        ("logistic", 1.0): (0.276, 0.232, 0.266, 0.212),
        ("logistic", 0.5): (0.276, 0.245, 0.301, 0.226),
        ("logistic", 0.1): (0.276, 0.293, 0.336, 0.246),
        ("svm", 1.0): (0.283, 0.253, 0.267, 0.209),
        ("svm", 0.5): (0.283, 0.262, 0.269, 0.224),
        ("svm", 0.1): (0.283, 0.269, 0.268, 0.239),
    }.items()}



# -- mpdp reproduce 004-table2 -------------------------------------------------------------------------------------
def _datasets(quick: bool, rng: RandomSource) -> list[tuple[str, Dataset, tuple[str, ...], str]]:
    """(label, data, losses, what it stands for)."""
    adult = load_adult()
    if quick:  # a public random subsample: seconds instead of minutes
        adult = adult.rows(np.sort(rng.spawn("adult subsample").permutation(adult.n)[:1500]))
    n_syn = 1_000 if quick else 20_000
    mixed = mixed_tabular(n_syn, numeric=5, categorical=4, categories=4, rng=rng.spawn("mixed"))
    regress = mixed_tabular(n_syn, numeric=5, categorical=4, categories=4, task="regression",
                            rng=rng.spawn("regression"))
    return [("Census Income (Adult)", adult, ("logistic", "svm"), "Census Income"),
            ("synthetic mixed classification", mixed, ("logistic", "svm"), "Credit / Diabetes (unavailable)"),
            ("synthetic mixed regression", regress, ("linear",), "Bike sharing / News popularity (unavailable)")]


def _splits(data: Dataset, folds: int, rng: RandomSource) -> list[tuple[Dataset, Dataset]]:
    """The first ``folds`` folds of a 10-fold stratified cross-validation (``folds > 10``: 10)."""
    pairs = kfold_indices(data, 10, stratify=data.task == "classification", rng=rng)
    return [(data.rows(tr), data.rows(te)) for tr, te in pairs[:min(folds, 10)]]


_DISPLAY = {Method.PFDS: "pfds (paper)", "pfds-mpdp": "pfds (mpdp)", "np-agt-cv": "np-agt (cv)"}


def reproduce_table2(options: ReproOptions) -> ReproTable:
    start = time.perf_counter()
    quick = options.quick
    runs = options.repetitions if options.repetitions is not None else (1 if quick else 10)
    folds = options.folds if options.folds is not None else (1 if quick else 10)
    if runs < 1 or folds < 1:
        raise ParameterError(explain("runs, folds", (runs, folds), "both >= 1", "pass --runs 1 --folds 1"))
    agents = 5 if quick else 100
    eval_agents = 3 if quick else 20
    methods = (Method.NP_AGT, "np-agt-cv", Method.DP_PRED, Method.PFDS_S, Method.PFDS, "pfds-mpdp", "pfds-vote")
    cells: dict[tuple[str, str, float, str], list[float]] = {}
    for label, data, losses, _ in _datasets(quick, options.rng):
        for eps in (1.0, 0.5, 0.1):
            for run in range(runs):
                rng = options.rng.spawn(f"{label}/{eps}/{run}")
                for fold, (train, test) in enumerate(_splits(data, folds, rng.spawn("folds"))):
                    setting = Setting(agents=agents, epsilon=eps, eval_agents=eval_agents)
                    result = evaluate_split(train, test, setting, methods=methods, losses=losses,
                                            rng=rng.spawn(f"fold {fold}"))
                    for (method, loss), err in result.errors.items():
                        cells.setdefault((label, loss, eps, method), []).append(err)
    rows = []
    for (label, loss, eps, method), errs in cells.items():
        # The mpdp variant is measured against the paper's PFDS figure: the target.
        paper_key = Method.PFDS if method == "pfds-mpdp" else method
        paper = PAPER_TABLE2.get((loss, eps), {}).get(paper_key) if label.startswith("Census") else None
        rows.append(ReproRow(setting={"dataset": label, "task": loss, "epsilon": eps,
                                      "method": str(_DISPLAY.get(method, method))},
                             metric="mse" if loss == "linear" else "misclassification", paper=paper,
                             ours_mean=float(np.mean(errs)), ours_std=float(np.std(errs)), repetitions=len(errs)))
    notes = [
        f"{agents} agents assigned by distance to random anchors on the first numeric attribute (age for Adult); "
        f"first {min(folds, 10)} fold(s) of a 10-fold stratified CV x {runs} run(s); PFDS and NP-Agt errors are "
        f"means over {eval_agents} randomly chosen agents; h_max=8, t=10, p=4, max_leaves=1024.",
        "Credit, Diabetes, Bike sharing and News popularity are not available: they are replaced by synthetic "
        "mixed-type classification and regression tasks (paper: None).",
        "pfds-vote (not in the paper) is the error of the majority vote of the shared trees themselves.",
        "pfds (paper) is the paper's algorithm; pfds (mpdp) is the same protocol run (same messages, same eps "
        "on every ledger) with each agent choosing the shared data's weight (0 included) and its regulariser by "
        "3-fold CV on its own records (mpdp.learning.pfds.fit); its paper column repeats the paper's PFDS "
        "figure, the target.",
        "np-agt (cv) (not in the paper) is NP-Agt with pfds (mpdp)'s regulariser choice (3-fold CV on the agent's "
        "own records, no shared data): pfds (mpdp) minus np-agt (cv) is what the shared data itself adds.",
        "SVM = Huber hinge (h=0.5) for every method (objective perturbation needs it); DP-Pred's lambda=0.05.",
        "Always predicting the majority class scores 0.248 on Adult (0.239 on the paper's 48,842 records): the "
        "paper's NP-Agt (0.276) is worse than that, ours is not. With ~400 records per agent the trees' leaves are "
        "mostly Laplace noise and PFDS and DP-Pred fall back to the majority class; why, measured: the Accuracy "
        "section of mpdp.learning.pfds.model.",
    ]
    if quick:
        notes.append("quick mode: a 1,500-record Adult subsample, 1,000-record synthetic tasks, 5 agents")
    return ReproTable("004-table2", "PFDS vs DP-Pred vs NP-Agt: error (Table 2)", rows, notes,
                      time.perf_counter() - start)


# -- mpdp reproduce 004-fig3 -------------------------------------------------------------------------------------
def fidelity(data: Dataset, *, agents: int, h_values: tuple[int, ...], epsilon: float, repeats: int,
             evaluated: int, rng: RandomSource) -> dict[tuple[int, str], dict[str, list[float]]]:
    """Figure 3: per agent, log10 size error, histogram distance and seconds, for PFDS and PFDS-."""
    schema = Schema(data.attributes, "classification" if data.task == "classification" else "regression")
    part = horizontal_by_anchors(data, "age" if "age" in data.attribute_names else data.attribute_names[0],
                                 agents, rng=rng.spawn("partition"))
    chosen = [k for k in range(agents) if part.sizes[k] > 0][:evaluated]
    out: dict[tuple[int, str], dict[str, list[float]]] = {}
    for h_max in h_values:
        params = params_for(PFDSSettings(h_max=h_max), len(schema.attributes))
        for k in chosen:
            d = part.party(k)
            values, labels = attribute_view(d)
            for optimize in (True, False):
                method = Method.PFDS if optimize else Method.PFDS_MINUS
                ledger = PrivacyLedger(epsilon=epsilon, subject=f"party:agent{k}")
                agent_rng = rng.spawn(f"{h_max}/{k}/{method}")
                begin = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    tree = make_tree(values, labels, schema.domain, params.tree, epsilon_level=epsilon / (2 * h_max),
                                     rng=agent_rng, ledger=ledger)
                    totals = tree.leaf_counts.sum(axis=1) if tree.leaf_counts is not None else np.zeros(0)
                    if optimize:
                        levels = noisy_level_counts(tree, values, params.p, epsilon=epsilon / 2, rng=agent_rng,
                                                    ledger=ledger)
                        sizes = consistent_counts(tree, levels, totals).leaves
                    else:
                        sizes = np.maximum(totals, 0.0)
                    synthetic, _ = synthesize(tree, integer_sizes(sizes), rng=agent_rng)
                seconds = time.perf_counter() - begin
                cell = out.setdefault((h_max, method), {"size_error_log10": [], "wasserstein": [], "seconds": []})
                cell["size_error_log10"].append(math.log10(1.0 + size_error(d.n, synthetic.shape[0])))
                cell["wasserstein"].append(histogram_distance(schema.domain, values, synthetic, repeats=repeats,
                                                              rng=agent_rng.spawn("partitions")))
                cell["seconds"].append(seconds)
    return out


def reproduce_fig3(options: ReproOptions) -> ReproTable:
    start = time.perf_counter()
    quick = options.quick
    data = load_adult()
    if quick:
        data = data.rows(np.sort(options.rng.spawn("adult subsample").permutation(data.n)[:3000]))
    cells = fidelity(data, agents=10 if quick else 100, h_values=(4, 6, 8) if quick else (2, 4, 6, 8),
                     epsilon=1.0, repeats=10 if quick else 50, evaluated=3 if quick else 20,
                     rng=options.rng.spawn("fig3"))
    rows = [ReproRow(setting={"h_max": h, "method": str(method)}, metric=metric, paper=None,
                     ours_mean=float(np.mean(v)), ours_std=float(np.std(v)), repetitions=len(v))
            for (h, method), metrics in cells.items() for metric, v in metrics.items()]
    notes = ["Census Income (Adult), eps = 1.0, agents by distance to anchors on age; per-agent averages.",
             "The paper gives Figure 3 as plots only (paper: None). DiffGen is left out: it needs attribute "
             "taxonomies that are not available.",
             "size_error_log10 = log10(1 + |n_synthetic - n|); wasserstein = mean W1 between histograms over "
             "random partitions of the universe (mpdp.learning.data_fidelity)."]
    return ReproTable("004-fig3", "PFDS data fidelity and runtime per agent (Figure 3)", rows, notes,
                      time.perf_counter() - start)


REPRODUCTIONS: tuple[Reproduction, ...] = (
    Reproduction("004-table2", "PFDS vs DP-Pred vs NP-Agt error on Census (Adult) and substitutes (Table 2)",
                 reproduce_table2, ReproFigure(x="epsilon", series=("method",), panels=("dataset", "task"))),
    Reproduction("004-fig3", "PFDS vs PFDS- data fidelity and runtime per agent on Adult (Figure 3)",
                 reproduce_fig3,
                 ReproFigure(x="h_max", series=("method",),
                             labels={"size_error_log10": "dataset size error, log10(1 + |n' − n|)",
                                     "wasserstein": "Wasserstein distance of histograms",
                                     "seconds": "time per agent (s)"})),
)
