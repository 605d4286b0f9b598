"""PFDS (paper 004) as a scikit-learn classifier: the agents' shared DP trees vote; their synthetic data is kept.

``PFDSClassifier(epsilon=1.0, agents=4, attributes=data.attributes).fit(data.values, data.y)`` splits the rows
at random into ``agents`` near-equal agents (every agent a sharer unless ``sharers`` says how many), runs the
protocol (:class:`mpdp.learning.pfds.PFDSAgent`: each sharer's DP tree and its consistent synthetic records,
labelled by the trees' vote and sent to every agent) and keeps what was released:

* ``predict`` is the majority vote of the released trees (Algorithm 4's labelling rule, ``pfds-vote`` in
  :mod:`mpdp.learning.pfds.evaluation`); a tie goes to class 0, so predictions are deterministic (the
  protocol's own labelling breaks ties at random). ``predict_proba`` is the share of trees voting for class 1. Both are
  post-processing of the trees: no further budget. (An agent's own ERM fit on its records plus the shared data
  is not a DP release and is not what this estimator predicts with.)
* ``synthetic_`` holds the released synthetic records (attribute view, labels); :meth:`sample` resamples them.

``X`` is the attribute view: numeric attributes in their units within their declared bounds, categorical ones
as codes 0..k-1 (:class:`~mpdp.datasets.Attribute`). Without ``attributes`` every column is numeric with the
public bounds [-1, 1] (``clip=True`` clips into them). Labels are 0 and 1.

The tree options (``sharers``, ``h_max``, ``t``, ``p``, ``max_leaves``) are ``pfds``'s options: their defaults
are the spec's (:mod:`mpdp.learning.pfds.spec`; None is the spec's data-dependent default, resolved by
:func:`~mpdp.learning.pfds.model.params_for`) and the spec's settings check them, with the errors of
``mpdp run pfds --option``. Each fit charges ``ledger`` a record's guarantee before the protocol: every record
belongs to one agent, so it is the largest of the agents' costs (:func:`~mpdp.learning.pfds.spec.agent_cost`,
what every engine charges an agent: ``epsilon`` for a sharer). Parameters, randomness and cloning:
:mod:`mpdp.learning.estimator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute
from mpdp.dp.accounting.cost import BudgetSpender
from mpdp.errors import ShapeMismatchError, explain
from mpdp.learning.estimator import BinaryClassifier, binary_labels, classes_of, row_split
from mpdp.learning.pfds.evaluation import agent_ledger
from mpdp.learning.pfds.model import PFDSAgent, Schema, params_for
from mpdp.learning.pfds.spec import Method, PFDSVariantSettings, agent_cost
from mpdp.learning.spec.run import DEFAULT_EPSILON, DEFAULT_PARTIES
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

__all__ = ["PFDSClassifier"]

FloatArray = npt.NDArray[np.float64]


class PFDSClassifier(BinaryClassifier):
    """PFDS's released trees as a classifier and its released synthetic records as a twin; see the module.

    After fit: ``trees_``, ``synthetic_`` (values, labels), ``classes_``, ``epsilon_spent_`` (per agent),
    ``communication_``.
    """

    def __init__(self, epsilon: float = DEFAULT_EPSILON, *, agents: int = DEFAULT_PARTIES["horizontal"],
                 sharers: int | None = None,
                 attributes: Sequence[Attribute] | None = None, h_max: int | None = None, t: int = 10,
                 p: int | None = None, max_leaves: int = 1024, clip: bool = False,
                 ledger: BudgetSpender | None = None, rng: RandomSource | None = None,
                 random_state: int | None = None) -> None:
        self.epsilon = epsilon
        self.agents = agents
        self.sharers = sharers
        self.attributes = attributes
        self.h_max = h_max
        self.t = t
        self.p = p
        self.max_leaves = max_leaves
        self.clip = clip
        self.ledger = ledger
        self.rng = rng
        self.random_state = random_state

    def _schema(self, d: int) -> Schema:
        attrs = tuple(self.attributes) if self.attributes is not None else tuple(
            Attribute(f"x{j}", "numeric", bounds=(-1.0, 1.0)) for j in range(d))
        if len(attrs) != d:
            raise ShapeMismatchError(explain("X", f"{d} columns", f"{len(attrs)} (one per attribute)",
                                             "pass the attribute view of the declared attributes"))
        return Schema(attrs, "classification")

    def _values(self, X: FloatArray, schema: Schema) -> FloatArray:
        if self.clip:
            lo = np.array([a.bounds[0] if a.bounds else -np.inf for a in schema.attributes])
            hi = np.array([a.bounds[1] if a.bounds else np.inf for a in schema.attributes])
            X = np.clip(X, lo, hi)
        schema.domain.check_values(X)
        return X

    def _settings(self) -> PFDSVariantSettings:
        """The tree options, checked by ``pfds``'s settings (None: the spec's default)."""
        given = {"sharers": self.sharers, "h_max": self.h_max, "t": self.t, "p": self.p,
                 "max_leaves": self.max_leaves}
        return PFDSVariantSettings.from_options(given, source=type(self).__name__)

    def fit(self, X: Any, y: Any) -> Self:
        settings = self._settings()
        Xa, ya = self._check_features_labels(X, y)
        ya = binary_labels(ya)
        schema = self._schema(Xa.shape[1])
        Xa = self._values(Xa, schema)
        params = params_for(settings, Xa.shape[1])
        root = self._fit_source()
        parts = row_split(Xa.shape[0], self.agents, root.spawn("rows"))
        names = [f"agent{k}" for k in range(len(parts))]
        sharers = names if settings.sharers is None else names[: settings.sharers]
        ledgers = {n: agent_ledger(Method.PFDS, self.epsilon, n, sharer=n in sharers, regression=False)
                   for n in names}
        costs = [c for n in names if (c := agent_cost(Method.PFDS, self.epsilon, sharer=n in sharers)) is not None]
        agents = {n: PFDSAgent(n, Xa[idx], ya[idx], schema, params, self.epsilon, sharers, ledger=ledgers[n])
                  for n, idx in zip(names, parts, strict=True)}
        if self.ledger is not None and costs:  # a record's guarantee: its agent's cost, the largest of them
            self.ledger.spend(max(costs, key=lambda c: c.epsilon), label=Method.PFDS.value)
        run = run_protocol(agents, rng=root.spawn("protocol"))
        self.trees_ = [a.tree for a in agents.values() if a.tree is not None]
        self.synthetic_ = agents[names[0]].training_set(include_own=False)
        self.schema_ = schema
        self.classes_ = classes_of()
        self.epsilon_spent_ = {n: led.spent.epsilon for n, led in ledgers.items()}
        self.communication_ = run.communication()
        return self

    def predict_proba(self, X: Any) -> FloatArray:
        values = self._values(self._check_features(X, reset=False), self.schema_)
        votes = np.stack([t.predict(values) for t in self.trees_]).astype(np.float64)
        share = votes.mean(axis=0)
        return np.column_stack([1 - share, share])

    def predict(self, X: Any) -> FloatArray:
        share = self.predict_proba(X)[:, 1]
        out: FloatArray = (share > 0.5).astype(np.float64)
        return out

    def sample(self, n: int, *, rng: RandomSource | None = None) -> tuple[FloatArray, FloatArray]:
        """``n`` records drawn with replacement from the released synthetic records (post-processing), each value
        within its attribute's domain and type (:meth:`~mpdp.datasets.dataset.Attribute.in_domain`)."""
        values, labels = self.synthetic_
        pick = (rng or RandomSource.fresh()).integers(0, values.shape[0], n)
        drawn = np.column_stack([a.in_domain(values[pick, j]) for j, a in enumerate(self.schema_.attributes)])
        return drawn, labels[pick]
