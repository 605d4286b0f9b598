"""PFDS, Privacy-preserving Federated Data Sharing (paper 004, Algorithms 1, 2 and 4): the agents.

Every agent is a :class:`PFDSAgent` holding only its own records. A protocol run has two message steps:

1. ``"tree"`` (SharePredictor, Algorithm 2): each sharer grows its private tree (:func:`make_tree`, budget
   ``eps / (2 h_max)`` per level) and sends the public predictor (structure and leaf labels) to every other
   sharer.
2. ``"data"`` (ShareData, Algorithm 4): each sharer synthesises an unlabelled private version of its data
   (optPrivateGen, :mod:`mpdp.learning.pfds.consistency`, budget ``eps / 2``), labels every synthetic record by
   the majority vote of all sharers' trees (regression: a value drawn uniformly from the voted bucket), and
   sends the labelled records to every other agent.

Then each agent trains its predictor on its own records plus every shared dataset (Algorithm 1, line 3;
:meth:`PFDSAgent.fit`, :mod:`mpdp.learning.pfds.fit`), which spends nothing: the shared data is DP and the
predictor is not released. ``PFDSParams.variant`` picks how (the protocol is the same for both):

* ``"paper"``: the paper's PFDS, one ERM over the union, every record weighted alike, fixed ``lam``;
* ``"mpdp"`` (default): the agent chooses the total weight of the shared data (``0`` included) and its
  regulariser by k-fold cross-validation on its own records, with the shared labels' class balance corrected
  to its own (Accuracy below says why, and what it gains).

Variants (paper 004, section 4): ``labelling="own"`` is PFDS(s) (a sharer labels with its own tree only and
no trees are exchanged); ``optimize=False`` is PFDS- (leaf sizes are the rounded, clipped noisy leaf totals;
the ``eps / 2`` of Algorithm 5 is not spent).

Security
--------
Each sharer's shared outputs are ``eps``-DP for its records (Theorem 3.3: ``h_max * eps/(2 h_max)`` for the
tree plus ``(p - 1) * eps/(2 (p - 1))`` for the level counts); each release is recorded on the sharer's
ledger. Agents are semi-honest: they see only DP outputs of other agents. Received messages are decoded by
the strict codec and checked against the public schema (:class:`MalformedMessageError` otherwise).

Accuracy
--------
The algorithm is the paper's; its accuracy depends on how many records a sharer holds. On Census (Adult)
with 100 agents (about 400 records each, section 4's setting) it does not reach Table 2. Measured on a
validation split of a training fold at ``eps = 1``:

* a tree has about 700 leaves, of which about 40 hold any of the sharer's records, and each leaf count carries
  Laplace noise of scale ``2 h_max / eps = 16``: leaf labels outside those 40 leaves are coin flips, and about
  65% of the synthetic records land in leaves holding no real record (the top ``p - 1`` levels' counts, at
  scale ``2 (p - 1) / eps = 6``, carry most of the size information);
* the trees' majority vote has error 0.22 (0.20 without noise; majority class 0.25) and labels only 7% of real
  records positive: logistic regression (``lam = 1e-3``) trained on vote-labelled records, synthetic *or
  real*, predicts the majority class; with almost no regularisation it reaches 0.22 on vote-labelled real
  records and still the majority class on the synthetic ones;
* NP-Agt, a regularised model on an agent's own records, scores 0.19-0.21 (the paper's 0.276 is worse than
  the majority class), and DP-Pred (objective perturbation on 400 records) predicts the majority class at every
  lambda in 0.005..0.05.

* more records per agent do not close the gap: with 10 or 3 agents (~3,600 or ~12,000 records each) the vote
  reaches 0.20-0.21 and PFDS 0.25 and 0.24 against NP-Agt's 0.19 and 0.18. Trees on randomly chosen attributes
  are a weaker labeller than a linear model on a few hundred real records, and records drawn uniformly inside
  a leaf put the attributes its path leaves free (most of them, at depth 8 over 14 attributes) across their
  public range rather than where the population lies.

So no choice inside the paper's algorithm (synthesis, weights, labelling) brings PFDS below NP-Agt at this
agent size: even with real records in place of the synthetic ones its labels are worse than the agents' own.

mpdp variant (``variant="mpdp"``), departures and their cost:

* *Where*: Algorithm 1, line 3 only (:func:`mpdp.learning.pfds.fit.cv_fit`). *What*: the shared data's total
  weight ``w`` relative to the agent's own records (grid ``(0, 0.1, 0.3, 1)``) and the regulariser (grid
  ``(1e-4, 1e-3, 1e-2)``) are chosen by 3-fold CV on the agent's own records; the shared records are
  reweighted to the agent's class balance (the vote labels are 37% positive on the synthetic records, 2-7%
  on real ones, 25% in the population) and subsampled to 2,000 records. *Why*: the paper's equal weights let
  ~40,000 synthetic records outvote ~400 real ones; the paper leaves the weighting open. *Cost*: none. The
  messages and every ledger are those of the paper's protocol (``eps`` per sharer, Theorem 3.3); the choice
  reads only the agent's own records and DP outputs, and the predictor is not released.
* Measured (``mpdp reproduce 004-table2 --folds 4 --runs 1 --seed 2026``, Census rows, 100 agents, 20 evaluated
  per split; paper's PFDS in brackets): the mpdp fit scores 0.188 / 0.191 / 0.188 (LR, ``eps`` = 1 / 0.5 / 0.1;
  0.212 / 0.226 / 0.246) and 0.192 / 0.195 / 0.193 (SVM; 0.209 / 0.224 / 0.239), against the paper fit's
  0.247-0.284, DP-Pred's 0.248-0.268 and NP-Agt's 0.193-0.198 on the same agents. So the targets hold at every
  ``eps`` against the paper and DP-Pred, and against NP-Agt for LR (by 0.006-0.008) and the SVM at ``eps`` = 1
  and 0.5 (by 0.003-0.005; a tie at 0.1, 0.193 both). The margin over NP-Agt is mostly the cross-validated
  regulariser: on fold 1 at ``eps = 1`` with ``w`` fixed at 0 the same procedure scores 0.185 (LR) and 0.185
  (SVM) against 0.183 and 0.188 with sharing, and CV picks ``w = 0`` for 40% (LR) to 55% (SVM) of the agents. The
  table's ``np-agt (cv)`` row (NP-Agt with the same CV'd regulariser, no shared data) measures this on the same
  four folds: 0.189 / 0.190 / 0.193 (LR) and 0.194 / 0.199 / 0.198 (SVM), so the shared data itself moves the
  error by +0.001 to -0.005, within the fold-to-fold spread. The synthetic data, not the weighting, is what
  limits PFDS here (the points above).
* Tried and not kept (no gain): labelling the synthetic records by the trees' pooled noisy leaf counts
  instead of their hard vote (error on real test records 0.235 vs 0.233 at ``eps = 1``; it is free
  post-processing, but the pooled score only ranks well, AUC 0.85, and is badly calibrated); adding that
  pooled score as a feature of the agent's model (at most 0.005 better at ``eps = 1``, none at 0.1, and it
  would need every tree's counts sent to every agent and the trees at prediction time).

References
----------
Paper 004 (Fioretto and Van Hentenryck, AAMAS 2019), sections 3-3.2, Algorithms 1, 2, 4 and 5, Theorems 3.1-3.3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.errors import DomainError, MalformedMessageError, ParameterError, ShapeMismatchError, explain
from mpdp.learning import erm
from mpdp.learning.pfds import fit as pfds_fit
from mpdp.learning.pfds import scoring, tree_noise
from mpdp.learning.pfds.consistency import consistent_counts, integer_sizes, noisy_level_counts, synthesize
from mpdp.learning.pfds.schema import Schema, encoded_features, features
from mpdp.learning.pfds.scoring import AgentEvaluation, SpendTally, theta_error
from mpdp.learning.pfds.spec import AgentSettings, PFDSSettings, PFDSVariantSettings
from mpdp.learning.pfds.tree import PrivateTree, TreeParams, make_tree
from mpdp.randomness import RandomSource, resolve
from mpdp.runtime import Comm, Party

__all__ = ["PFDSAgent", "PFDSParams", "Schema", "encoded_features", "features", "majority_vote", "params_for",
           "vote_labels"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PFDSParams:
    """PFDS hyper-parameters (paper 004, section 4: ``h_max = 8``, ``t = 10``, ``p = 4``).

    ``max_leaves`` bounds the tree (see :mod:`mpdp.learning.pfds.tree`); ``optimize=False`` gives PFDS-;
    ``labelling="own"`` gives PFDS(s).

    ``variant`` says how an agent trains on its data plus the shared data (Algorithm 1, line 3;
    :mod:`mpdp.learning.pfds.fit`); the protocol, its messages and the privacy cost are the same for both:

    * ``"mpdp"`` (default): the weight of the shared data (a value of ``shared_weights``, relative to the
      agent's own records, ``0`` included) and the regulariser (a value of ``lams``) are chosen by
      ``cv_folds``-fold cross-validation on the agent's own records, with the shared data's class balance
      corrected to the agent's (``prior_correction``) and subsampled to at most ``max_shared`` records.
    * ``"paper"``: the paper's fit, one ERM over the union with equal weights and regulariser ``lam``.
    """

    h_max: int = 8
    t: int = 10
    p: int = 4
    max_leaves: int | None = 1024
    optimize: bool = True
    labelling: Literal["ensemble", "own"] = "ensemble"
    lam: float = 1e-3
    variant: Literal["mpdp", "paper"] = "mpdp"
    shared_weights: tuple[float, ...] = (0.0, 0.1, 0.3, 1.0)
    lams: tuple[float, ...] = (1e-4, 1e-3, 1e-2)
    cv_folds: int = 3
    prior_correction: bool = True
    max_shared: int = 2000

    def __post_init__(self) -> None:
        TreeParams(self.h_max, self.t, self.max_leaves)  # validates the tree's parameters
        if not isinstance(self.p, int) or not 2 <= self.p <= self.h_max:
            raise ParameterError(explain("p", self.p, f"an int with 2 <= p <= h_max = {self.h_max}",
                                         "pass p <= h_max (the paper uses p = 4 with h_max = 8)"))
        if self.labelling not in ("ensemble", "own"):
            raise ParameterError(explain("labelling", self.labelling, "'ensemble' (PFDS) or 'own' (PFDS(s))",
                                         "pick one"))
        if not (np.isfinite(self.lam) and self.lam > 0):
            raise ParameterError(explain("lam", self.lam, "a finite number > 0", "pass e.g. lam=1e-3"))
        if self.variant not in ("mpdp", "paper"):
            raise ParameterError(explain("variant", self.variant, "'mpdp' (cross-validated fit) or 'paper'",
                                         "pick one; the protocol and its privacy cost are the same"))
        pfds_fit.validate_grid("shared_weights", self.shared_weights, allow_zero=True)
        pfds_fit.validate_grid("lams", self.lams, allow_zero=False)
        if not isinstance(self.cv_folds, int) or isinstance(self.cv_folds, bool) or self.cv_folds < 2:
            raise ParameterError(explain("cv_folds", self.cv_folds, "an int >= 2", "pass e.g. cv_folds=3"))
        if not isinstance(self.max_shared, int) or isinstance(self.max_shared, bool) or self.max_shared < 1:
            raise ParameterError(explain("max_shared", self.max_shared, "an int >= 1", "pass e.g. max_shared=2000"))
        if not isinstance(self.prior_correction, bool):
            raise ParameterError(explain("prior_correction", self.prior_correction, "True or False",
                                         "pass a bool"))

    @property
    def tree(self) -> TreeParams:
        return TreeParams(self.h_max, self.t, self.max_leaves)


def params_for(settings: AgentSettings, attributes: int) -> PFDSParams:
    """The protocol's parameters for a run with ``settings`` on data with ``attributes`` attributes.

    The data-dependent defaults are resolved here and only here: ``h_max`` is the paper's 8 within its
    precondition ``h_max <= |A|`` (and at least 2, the least depth a consistency step over ``p >= 2`` levels
    needs), ``p`` the paper's 4 within ``h_max``. The baselines' settings carry no tree options: their
    parameters are these defaults (only the fits' regularisers matter to them)."""
    tree = settings if isinstance(settings, PFDSSettings) else PFDSSettings()
    h_max = tree.h_max if tree.h_max is not None else min(8, max(2, attributes))
    p = tree.p if tree.p is not None else min(4, h_max)
    variant: Literal["mpdp", "paper"] = "paper" if isinstance(settings, PFDSVariantSettings) and \
        settings.variant == "paper" else "mpdp"
    return PFDSParams(h_max=h_max, t=tree.t, p=p, max_leaves=tree.max_leaves, variant=variant)


def majority_vote(predictions: IntArray, n_classes: int, rng: RandomSource) -> IntArray:
    """Column-wise most frequent class of ``predictions`` (trees x records); ties broken uniformly."""
    votes = np.zeros((n_classes, predictions.shape[1]))
    for c in range(n_classes):
        votes[c] = np.count_nonzero(predictions == c, axis=0)
    best = votes.max(axis=0)
    jitter = rng.random(votes.shape)
    out: IntArray = np.argmax(np.where(votes == best, 1.0 + jitter, 0.0), axis=0).astype(np.int64)
    return out


def vote_labels(trees: Sequence[PrivateTree], values: FloatArray, schema: Schema, rng: RandomSource) -> FloatArray:
    """Algorithm 4, lines 4-7: labels of synthetic records by the trees' majority vote.

    Classification returns the voted class; regression draws a value uniformly from the voted bucket.
    """
    domain = schema.domain
    if values.shape[0] == 0:
        return np.zeros(0)
    votes = majority_vote(np.stack([t.predict(values) for t in trees]), domain.n_classes, rng)
    if domain.task == "classification":
        return votes.astype(np.float64)
    low, high = domain.bucket_bounds(votes)
    labels: FloatArray = low + (high - low) * rng.random(votes.size)
    return labels


class PFDSAgent(Party):
    """One agent of PFDS: its own records, its ledger, and what it receives.

    Parameters
    ----------
    name:
        The agent's party name.
    values, labels:
        The agent's records (attribute view, n x d) and labels (classes ``0/1`` or regression targets).
    schema:
        Public attribute types shared by all agents.
    params:
        PFDS hyper-parameters.
    epsilon:
        The agent's privacy budget for what it shares.
    sharers:
        Names of the sharing agents (the set S), the same list on every agent.
    ledger:
        Where this agent's releases are charged (e.g. a :class:`mpdp.dp.accounting.PrivacyLedger` with budget
        ``epsilon``); every release is charged before its noise is drawn.
    evaluation:
        For an experiment: the analyst's test records, the losses and the fits (``"paper"``, ``"mpdp"``)
        this agent scores after the protocol (:mod:`mpdp.learning.pfds.scoring`). Its predictors stay here;
        :meth:`run` returns their test errors only.
    """

    def __init__(self, name: str, values: FloatArray, labels: FloatArray, schema: Schema, params: PFDSParams,
                 epsilon: float, sharers: Sequence[str], *, ledger: BudgetSpender,
                 evaluation: AgentEvaluation | None = None) -> None:
        super().__init__(name)
        tree_noise.check_epsilon(epsilon)
        values = np.asarray(values, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.float64)
        if values.shape[0] == 0:
            raise ShapeMismatchError(explain(f"records of agent {name}", 0, "at least one record",
                                             "leave empty agents out of the protocol"))
        if labels.shape != (values.shape[0],):
            raise ShapeMismatchError(explain("labels", labels.shape, f"({values.shape[0]},)", "one label per row"))
        schema.domain.check_values(values)
        schema.domain.label_classes(labels)  # refuses labels outside the public label domain
        params.tree.check_domain(schema.domain)
        self.values, self.labels = values, labels
        self.schema, self.params, self.epsilon = schema, params, float(epsilon)
        self.sharers = tuple(sharers)
        self.ledger = SpendTally(ledger)
        self.evaluation = evaluation
        self.tree: PrivateTree | None = None
        self.synthetic: tuple[FloatArray, FloatArray] | None = None
        self.received: dict[str, tuple[FloatArray, FloatArray]] = {}

    @property
    def is_sharer(self) -> bool:
        return self.name in self.sharers

    # -- the protocol ---------------------------------------------------------------------------------------
    def run(self, comm: Comm) -> dict[str, Any]:
        """Algorithms 2 and 4 from this agent's side, then the :class:`AgentEvaluation` if given.

        Returns plain data: ``synthetic`` and ``received`` (record counts), ``spent`` (the epsilon this run
        charged), for a sharer its releases ``released`` (its labelled synthetic records) and ``tree`` (its
        public predictor), and for an evaluated agent ``errors`` (``"<fit>/<loss>"`` -> test error) and
        ``choices`` (the ``"mpdp"`` fit's shared weight and regulariser per loss)."""
        summary = self._share(comm)
        if self.evaluation is not None:
            summary.update(self._score(self.evaluation, comm.rng.spawn("evaluation")))
        return summary

    def _share(self, comm: Comm) -> dict[str, Any]:
        other_sharers = [s for s in self.sharers if s != self.name]
        trees: list[PrivateTree] = []
        if self.is_sharer:
            self.tree = self._share_predictor(comm.rng)
            trees.append(self.tree)
            if self.params.labelling == "ensemble":
                comm.broadcast(self.tree, label="tree", to=other_sharers)
                for src in other_sharers:
                    trees.append(PrivateTree.from_wire(comm.recv(src, label="tree"), self.schema.domain))
            self.synthetic = self._share_data(trees, comm.rng)
            comm.broadcast({"values": self.synthetic[0], "labels": self.synthetic[1]}, label="data")
        for src in other_sharers:
            self.received[src] = self._check_data(src, comm.recv(src, label="data"))
        released = None if self.synthetic is None else {"values": self.synthetic[0], "labels": self.synthetic[1]}
        return {"synthetic": 0 if self.synthetic is None else int(self.synthetic[0].shape[0]),
                "received": sum(v.shape[0] for v, _ in self.received.values()),
                "spent": self.ledger.epsilon, "released": released,
                "tree": None if self.tree is None else self.tree.to_wire()}

    def _score(self, evaluation: AgentEvaluation, rng: RandomSource) -> dict[str, Any]:
        """Each requested fit, for each loss, scored on the test records (Algorithm 1, line 3, then section 4's
        error measure); the predictors stay with this agent."""
        X_test = evaluation.test_features(self.schema)
        errors: dict[str, float] = {}
        choices: dict[str, list[float]] = {}
        for loss_name in evaluation.losses:
            loss = scoring.loss_for(loss_name)
            for fit in evaluation.fits:
                if fit == "paper":
                    theta = self.fit(loss, variant="paper")
                else:
                    choice = self.fit_choice(loss, variant="mpdp", rng=rng.spawn(f"mpdp fit {loss_name}"))
                    theta = choice.theta
                    choices[loss_name] = [choice.shared_weight, choice.lam]
                errors[f"{fit}/{loss_name}"] = theta_error(loss_name, theta, X_test, evaluation.labels)
        return {"errors": errors, "choices": choices}

    def _share_predictor(self, rng: RandomSource) -> PrivateTree:
        """Algorithm 2, line 2: ``makeTree(D_i, ..., eps / (2 h_max))``."""
        eps_level = self.epsilon / (2 * self.params.h_max)
        return make_tree(self.values, self.labels, self.schema.domain, self.params.tree, epsilon_level=eps_level,
                         rng=rng, ledger=self.ledger)

    def _share_data(self, trees: Sequence[PrivateTree], rng: RandomSource) -> tuple[FloatArray, FloatArray]:
        """Algorithm 4, lines 2-7 (and Algorithm 5): synthetic records labelled by the trees' vote."""
        tree = trees[0]
        if tree.leaf_counts is None:  # pragma: no cover - a sharer always holds its own counts
            raise ParameterError("a sharer's own tree must carry its noisy leaf counts")
        leaf_totals = tree.leaf_counts.sum(axis=1)
        if self.params.optimize:
            levels = noisy_level_counts(tree, self.values, self.params.p, epsilon=self.epsilon / 2, rng=rng,
                                        ledger=self.ledger)
            leaf_sizes = consistent_counts(tree, levels, leaf_totals).leaves
        else:
            leaf_sizes = np.maximum(leaf_totals, 0.0)  # PFDS-: no consistency step
        values, _ = synthesize(tree, integer_sizes(leaf_sizes), rng=rng)
        return values, vote_labels(trees, values, self.schema, rng)

    def _check_data(self, src: str, body: Any) -> tuple[FloatArray, FloatArray]:
        """Validate a received labelled dataset against the public schema."""
        if not isinstance(body, dict) or set(body) != {"values", "labels"}:
            raise MalformedMessageError(explain(f"data message from {src}", type(body).__name__,
                                                "{'values', 'labels'}", "reject the sender"))
        values, labels = body["values"], body["labels"]
        if not (isinstance(values, np.ndarray) and isinstance(labels, np.ndarray)
                and values.dtype == np.float64 and labels.dtype == np.float64
                and values.ndim == 2 and labels.shape == (values.shape[0],)):
            raise MalformedMessageError(explain(f"data message from {src}", "arrays of the wrong type or shape",
                                                "float64 values (n x d) and labels (n,)", "reject the sender"))
        try:
            self.schema.domain.check_values(values, what=f"records from {src}")
            self.schema.domain.label_classes(labels)
        except (DomainError, ShapeMismatchError) as exc:
            raise MalformedMessageError(f"{src} sent records outside the public schema: {exc}") from exc
        return values, labels

    # -- Algorithm 1, line 3 ------------------------------------------------------------------------------------
    def training_set(self, *, include_own: bool = True) -> tuple[FloatArray, FloatArray]:
        """The agent's own records (optionally) plus every shared dataset, as attribute-view rows and labels."""
        parts = [self.values] if include_own else []
        labels = [self.labels] if include_own else []
        if self.synthetic is not None:
            parts.append(self.synthetic[0])
            labels.append(self.synthetic[1])
        for v, y in self.received.values():
            parts.append(v)
            labels.append(y)
        if not parts:
            return np.empty((0, self.values.shape[1])), np.empty(0)
        return np.concatenate(parts), np.concatenate(labels)

    def fit(self, loss: erm.Loss, *, variant: Literal["mpdp", "paper"] | None = None,
            theta0: FloatArray | None = None, rng: RandomSource | None = None) -> FloatArray:
        """Train on own data plus the shared data (no privacy cost: the model is not released).

        ``variant`` overrides ``params.variant`` (:mod:`mpdp.learning.pfds.fit`). ``theta0`` only warm-starts
        the paper's solver (its objective is strictly convex, so the minimiser is the same). ``rng`` draws the
        ``"mpdp"`` fit's folds and shared subsample (default: fresh OS entropy).
        """
        return self.fit_choice(loss, variant=variant, theta0=theta0, rng=rng).theta

    def fit_choice(self, loss: erm.Loss, *, variant: Literal["mpdp", "paper"] | None = None,
                   theta0: FloatArray | None = None, rng: RandomSource | None = None) -> pfds_fit.FitChoice:
        """:meth:`fit` with what it chose: the shared weight and regulariser (and the CV errors for ``"mpdp"``).

        An agent with a single record cannot cross-validate: ``"mpdp"`` then falls back to the paper's fit.
        """
        variant = self.params.variant if variant is None else variant
        if variant not in ("mpdp", "paper"):
            raise ParameterError(explain("variant", variant, "'mpdp' or 'paper'", "pick one"))

        def y_of(labels: FloatArray) -> FloatArray:
            return erm.to_pm1(labels) if loss.task == "classification" else labels

        if variant == "paper" or self.values.shape[0] < 2:  # one record cannot be cross-validated
            values, labels = self.training_set()
            theta = pfds_fit.paper_fit(loss, features(self.schema, values), y_of(labels), self.params.lam,
                                       theta0=theta0)
            return pfds_fit.FitChoice(theta, shared_weight=float("nan"), lam=self.params.lam, cv_error={})
        rng = resolve(rng)
        shared_values, shared_labels = self.training_set(include_own=False)
        if shared_values.shape[0] > self.params.max_shared:
            keep = np.sort(rng.spawn("shared subsample").permutation(shared_values.shape[0])[:self.params.max_shared])
            shared_values, shared_labels = shared_values[keep], shared_labels[keep]
        p = self.params
        return pfds_fit.cv_fit(loss, features(self.schema, self.values), y_of(self.labels),
                               features(self.schema, shared_values), y_of(shared_labels),
                               weights=p.shared_weights, lams=p.lams, folds=min(p.cv_folds, self.values.shape[0]),
                               prior_correction=p.prior_correction, rng=rng.spawn("cv folds"))
