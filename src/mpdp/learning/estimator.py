"""What every mpdp estimator shares with scikit-learn: parameters, cloning, randomness, budget and input checks.

Each paper's estimators (next to its model: :mod:`mpdp.learning.functional_mechanism.model`,
:mod:`mpdp.learning.ofpa_ofaa.estimator`, :mod:`mpdp.learning.distributed_erm.estimator`,
:mod:`mpdp.learning.dpvi.model`, :mod:`mpdp.learning.pfds.estimator`) subclass :class:`PrivateEstimator` and
scikit-learn's ``ClassifierMixin`` or ``RegressorMixin``, so ``get_params``/``set_params``,
``sklearn.base.clone``, ``Pipeline``, ``cross_val_score`` and ``GridSearchCV`` work. ``fit`` simulates every
party in this process (the same party roles and messages as a deployment, over the in-memory transport).

Randomness
----------
Two parameters, at most one set:

* ``rng``: a :class:`~mpdp.randomness.RandomSource`; each fit draws from it (so two fits draw different noise).
* ``random_state``: an int seed; each fit draws from ``RandomSource.seeded(random_state)``, so fits repeat
  exactly. Anyone who knows the seed knows the noise: for tests and reproducible experiments, not releases
  (the DP code warns with :class:`~mpdp.errors.PrivacyLeakWarning`).

Neither: fresh OS entropy per fit (the default, and the only private choice besides a fresh ``rng``).

``sklearn.base.clone`` never copies a random stream: a copied stream would replay the same noise in the clone,
and two releases of overlapping data with the same noise reveal their difference exactly. A clone receives an
independent child ``rng.spawn(<label drawn from rng>)`` instead, so the clones of one estimator (the candidates
and folds of a search) draw independent noise, reproducibly under a seeded parent. ``copy.deepcopy`` of an
estimator holding an ``rng`` fails (a :class:`RandomSource` cannot be copied); use ``clone``.

Privacy budget
--------------
Every fit is a release and spends on the estimator's ``ledger`` (a
:class:`~mpdp.dp.accounting.ledger.PrivacyLedger` or any :class:`~mpdp.dp.accounting.cost.BudgetSpender`)
before any noise is drawn. ``clone`` keeps the *same* ledger object (a copied ledger would double the budget),
so a hyper-parameter search spends once per fit: ``GridSearchCV`` with ``c`` candidates, ``k`` folds and
``refit=True`` makes ``c k + 1`` fits. Once the budget is gone the ledger refuses the next fit with
:class:`~mpdp.errors.BudgetExceededError`, recording nothing and releasing nothing. scikit-learn records a
failed fit as a score of ``nan`` and carries on unless told otherwise: pass ``error_score="raise"`` to stop
the search at the first refusal. The folds of a search overlap, so the privacy of the search is the
composition of all its fits, which is what the ledger adds up.

Parallel searches (``n_jobs > 1``) run fits in worker processes, which receive pickled copies of the estimator.
A copied in-memory ledger would let every worker spend the whole budget, so pickling an estimator that holds
one is refused (:class:`~mpdp.errors.PrivacyError`); a file-backed ledger
(:meth:`~mpdp.dp.accounting.ledger.PrivacyLedger.open_or_create`) re-reads its file under a lock at every
spend and is shared correctly. A :class:`RandomSource` cannot be pickled either: parallel searches use
``rng=None`` (fresh entropy in each fit) or ``random_state``.

scikit-learn's estimator checks
-------------------------------
``tests/learning/test_estimator.py`` runs ``sklearn.utils.estimator_checks.parametrize_with_checks`` on every
array estimator (with ``clip=True``, since the checks feed data outside [-1, 1], and ``random_state`` set).
Every check passes except these, which a DP estimator should fail:

* ``check_estimators_dtypes``, ``check_classifier_data_not_an_array``, ``check_fit2d_1feature``,
  ``check_classifiers_classes`` (classifiers): they train on labels 1 and 2 or on strings. The label domain
  {0, 1} is public and part of the sensitivity, so labels are never re-encoded from the private rows.
* ``check_classifiers_one_label`` (MPC Out P): trained on one class, one noisy release of the averaged minimisers
  need not predict that class; refusing the fit instead would reveal that the private labels hold one class.

:class:`~mpdp.learning.dpvi.DPVI` and :class:`~mpdp.learning.dpvi.VerticalDPVI` fit a
:class:`~mpdp.datasets.Dataset` (the mixture needs typed attributes), not an array, so the array checks do
not apply to them; ``get_params``, ``set_params`` and ``clone`` are tested.

Input
-----
:meth:`PrivateEstimator._check_features` (and ``_check_features_labels`` at fit time) run scikit-learn's
``validate_data`` (2-d float arrays, no NaN or infinity, no sparse input, ``n_features_in_`` and
``feature_names_in_``) and re-raise its errors as mpdp's typed errors (:class:`~mpdp.errors.ShapeMismatchError`,
:class:`~mpdp.errors.DomainError`), keeping scikit-learn's wording in the message. The domain each algorithm's
sensitivity assumes (features in [-1, 1], rows in the unit ball, labels in {0, 1}) is public and checked by the
algorithm itself: data outside it is refused, never silently rescaled from the private rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from mpdp.errors import DomainError, MpdpError, ParameterError, PrivacyError, ShapeMismatchError, explain
from mpdp.randomness import RandomSource

__all__ = ["SHARED_PARAMETERS", "BinaryClassifier", "EstimatorNotFittedError", "LinearBinaryClassifier",
           "PrivateEstimator", "binary_labels", "child_stream", "classes_of", "row_split", "unit_box"]

FloatArray = npt.NDArray[np.float64]

#: Parameters that ``clone`` hands over as the same object: budget keepers, never copied.
SHARED_PARAMETERS = frozenset({"ledger", "party_ledgers"})


class EstimatorNotFittedError(ParameterError, NotFittedError):  # type: ignore[misc]
    """An estimator used before ``fit``: mpdp's typed error that is also scikit-learn's ``NotFittedError``."""


def child_stream(parent: RandomSource) -> RandomSource:
    """An independent child of ``parent`` for a clone: its label is drawn from ``parent``, so successive clones
    differ and the sequence is reproducible under a seeded parent."""
    return parent.spawn("clone/" + parent.bytes(16).hex())


class PrivateEstimator(BaseEstimator):  # type: ignore[misc]
    """Base of mpdp's scikit-learn estimators; see the module docstring for randomness, budget and input."""

    def __sklearn_clone__(self) -> Self:
        params = self.get_params(deep=False)
        for name, value in params.items():
            if name in SHARED_PARAMETERS:
                continue
            if isinstance(value, RandomSource):
                params[name] = child_stream(value)
            else:
                params[name] = clone(value, safe=False)
        return type(self)(**params)

    def __getstate__(self) -> Any:
        for name in SHARED_PARAMETERS:
            keepers = getattr(self, name, None)
            for keeper in (keepers.values() if isinstance(keepers, Mapping) else [keepers]):
                if keeper is not None and getattr(keeper, "path", "unknown") is None:
                    raise PrivacyError(explain(f"{type(self).__name__}.{name}", "an in-memory ledger",
                                               "a file-backed ledger to copy the estimator to another process",
                                               "use PrivacyLedger.open_or_create(path, ...), or n_jobs=1"))
        return super().__getstate__()

    # -- randomness -------------------------------------------------------------------------------------------
    def _fit_source(self) -> RandomSource:
        """The root stream of one fit (module docstring, Randomness)."""
        rng: RandomSource | None = getattr(self, "rng", None)
        seed: int | None = getattr(self, "random_state", None)
        if rng is not None and seed is not None:
            raise ParameterError(explain("(rng, random_state)", (rng, seed), "at most one of them",
                                         "pass rng=RandomSource... or random_state=int, not both"))
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
                raise ParameterError(explain("random_state", seed, "None or an int >= 0",
                                             "pass e.g. random_state=0 (reproducible, not private)"))
            return RandomSource.seeded(int(seed))
        if rng is not None:
            if not isinstance(rng, RandomSource):
                raise ParameterError(explain("rng", type(rng).__name__, "an mpdp.randomness.RandomSource",
                                             "pass RandomSource.fresh() or use random_state=int"))
            return rng
        return RandomSource.fresh()

    # -- input ------------------------------------------------------------------------------------------------
    def _check_features(self, X: Any, *, reset: bool) -> FloatArray:
        """Validated float64 features (see the module docstring, Input); ``reset`` at fit time."""
        if not reset:
            try:
                check_is_fitted(self)
            except NotFittedError as exc:
                raise EstimatorNotFittedError(explain(type(self).__name__, "an unfitted estimator", "a fitted one",
                                                      "call fit(X, y) first")) from exc
        try:
            out: FloatArray = validate_data(self, X, reset=reset, dtype=np.float64, accept_sparse=False)
        except ValueError as exc:
            raise _typed(exc, "X") from exc
        return out

    def _check_features_labels(self, X: Any, y: Any) -> tuple[FloatArray, FloatArray]:
        """Validated float64 features and numeric labels, one per row, at fit time."""
        if y is None:
            raise ParameterError(explain("y", None, "one label per row", f"{type(self).__name__} requires y to be "
                                         "passed, but the target y is None: pass the labels"))
        try:
            X_out, y_out = validate_data(self, X, y, reset=True, dtype=np.float64, accept_sparse=False,
                                         y_numeric=True)
        except ValueError as exc:
            raise _typed(exc, "X, y") from exc
        return np.asarray(X_out, dtype=np.float64), np.asarray(y_out, dtype=np.float64)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = getattr(self, "random_state", None) is None  # fresh noise per fit unless seeded
        return tags


class BinaryClassifier(ClassifierMixin, PrivateEstimator):  # type: ignore[misc]
    """A binary mpdp classifier: the classes are 0 and 1 (public, never read off the rows)."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # two classes, 0 and 1: the label domain is public
        return tags


class LinearBinaryClassifier(BinaryClassifier):
    """A binary classifier whose ``decision_function`` is the log-odds of class 1: ``predict`` is its sign and
    ``predict_proba`` its logistic."""

    def decision_function(self, X: Any) -> FloatArray:  # pragma: no cover - each subclass defines it
        raise NotImplementedError(f"{type(self).__name__} must define decision_function")

    def predict_proba(self, X: Any) -> FloatArray:
        p = 1.0 / (1.0 + np.exp(-np.clip(self.decision_function(X), -500, 500)))
        return np.column_stack([1 - p, p])

    def predict(self, X: Any) -> FloatArray:
        out: FloatArray = (self.decision_function(X) > 0).astype(np.float64)
        return out


def _typed(exc: ValueError, name: str) -> MpdpError:
    if isinstance(exc, MpdpError):
        return exc
    text = str(exc)
    if "inconsistent numbers of samples" in text or "features, but" in text or "Expected 2D array" in text \
            or "minimum of" in text or "Found array with dim" in text:
        return ShapeMismatchError(explain(name, text, "records x features of the fitted shape",
                                          "pass a 2-d array with one label per row and the fitted columns"))
    return DomainError(explain(name, text, "finite numbers", "drop or impute missing values before fitting"))


def binary_labels(y: FloatArray, name: str = "y") -> FloatArray:
    """``y`` checked to lie in the public label domain {0, 1} (the sensitivities assume it).

    Continuous and multi-class targets are refused in scikit-learn's words ("Unknown label type: continuous",
    "Only binary classification is supported"), other two-class labels as outside the public domain.
    """
    if not np.all(np.isin(y, (0.0, 1.0))):
        kind = type_of_target(y)
        if kind == "continuous":
            raise DomainError(explain(name, "a continuous target", "two classes 0 and 1",
                                      "Unknown label type: continuous. Pass class labels 0 and 1"))
        if kind == "multiclass":
            raise DomainError(explain(name, f"{np.unique(y).size} classes", "labels in {0, 1}",
                                      "Only binary classification is supported: encode one class against the "
                                      "rest as 0 and 1"))
        raise DomainError(explain(name, np.unique(y)[:5], "labels in {0, 1}",
                                  "encode the two classes as 0 and 1 (the label domain is public)"))
    return y


def unit_box(X: FloatArray, *, clip: bool, name: str = "X") -> FloatArray:
    """Features in the public domain [-1, 1]: refused outside it, or clipped there with ``clip=True`` (a fixed
    per-record map, so the sensitivity holds and no privacy is lost)."""
    if clip:
        out: FloatArray = np.clip(X, -1.0, 1.0)
        return out
    if X.size and np.abs(X).max() > 1.0:
        raise DomainError(explain(name, f"values in [{X.min():g}, {X.max():g}]", "features in [-1, 1] (the public "
                                  "domain the sensitivity assumes)", "scale by public bounds, or pass clip=True"))
    return X


def row_split(n: int, parties: int, rng: RandomSource) -> list[npt.NDArray[np.int64]]:
    """A random split of ``n`` rows into ``parties`` near-equal parts, smaller parts first (every part non-empty)."""
    if isinstance(parties, bool) or not isinstance(parties, int) or not 1 <= parties <= n:
        raise ParameterError(explain("parties", parties, f"an int in 1..{n} (n_samples = {n}: the number of rows)",
                                     "use fewer parties than records"))
    order = rng.permutation(n).astype(np.int64)
    return sorted((np.sort(part) for part in np.array_split(order, parties)), key=len)


def classes_of(labels: Sequence[float] = (0.0, 1.0)) -> FloatArray:
    """The public classes of a binary mpdp classifier."""
    return np.asarray(labels, dtype=np.float64)
