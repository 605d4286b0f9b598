"""The DPVI estimators end to end (small): MPC parties agree, privacy is reported towards the analyst and each
party, the MPC run follows the float one, synthetic data keeps the schema, and bad input is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from mpdp.datasets.dataset import Dataset
from mpdp.datasets.synthetic import mixed_tabular
from mpdp.dp.accounting.ledger import PrivacyLedger
from mpdp.errors import BudgetExceededError, DomainError, ParameterError
from mpdp.learning.dpvi.mixture import MixtureModel
from mpdp.learning.dpvi.model import DPVI, VerticalDPVI
from mpdp.randomness import RandomSource

GROUPS = (("num0", "cat0"), ("num1", "cat1", "y"))


@pytest.fixture(scope="module")
def data() -> Dataset:
    return mixed_tabular(160, numeric=2, categorical=2, categories=3, rng=RandomSource.seeded(11))


def test_vertical_dpvi_trains_under_mpc_and_reports_privacy(data: Dataset) -> None:
    model = VerticalDPVI(components=2, epochs=1, batch_size=80, epsilon=2.0, delta=1e-5, batching="disjoint",
                         party_names=("bank", "clinic"), rng=RandomSource.seeded(12))
    model.fit(data, GROUPS)
    privacy = model.privacy_
    assert 1.99 < privacy.epsilon <= 2.0 and set(privacy.per_party) == {"bank", "clinic"}
    assert all(eps > privacy.epsilon for eps in privacy.per_party.values())  # each party knows its noise share
    assert len(model.trace_.epochs) == 1 and len(model.trace_.batch_sizes) == 2
    assert model.communication_["bytes"] > 0 and np.isfinite(model.nll(data))
    synthetic = model.synthesize(30, rng=RandomSource.seeded(13))
    assert synthetic.n == 30 and synthetic.attribute_names == data.attribute_names
    assert set(np.unique(synthetic.y)) <= {0.0, 1.0}


def test_mpc_run_follows_the_float_run_with_the_same_seeds(data: Dataset) -> None:
    # same public seed and root randomness: the trusted noise party draws exactly the float run's noise
    common = {"components": 2, "epochs": 2, "batch_size": 80, "epsilon": None, "noise_multiplier": 0.5,
              "learning_rate": 0.05, "public_seed": RandomSource.seeded(14).bytes(32)}
    secure = VerticalDPVI(noise="trusted", rng=RandomSource.seeded(15), **common)  # type: ignore[arg-type]
    secure.fit(data, GROUPS)
    plain = DPVI(rng=RandomSource.seeded(15), **common).fit(data)  # type: ignore[arg-type]
    np.testing.assert_allclose(secure.posterior_.mu, plain.posterior_.mu, atol=1e-3)
    other = DPVI(rng=RandomSource.seeded(16), **common).fit(data)  # type: ignore[arg-type]
    assert np.max(np.abs(other.posterior_.mu - plain.posterior_.mu)) > 1e-2  # the noise matters
    # the step with one-round FSS comparisons (the dealer's DCF keys) releases the same gradients up to roundings
    fss = VerticalDPVI(noise="trusted", comparisons="fss", rng=RandomSource.seeded(15), **common)  # type: ignore[arg-type]
    fss.fit(data, GROUPS)
    np.testing.assert_allclose(fss.posterior_.mu, secure.posterior_.mu, atol=1e-4)
    # and on masked wires (the dealer's tables and payload keys, 10 online rounds): the same up to roundings
    masked = VerticalDPVI(noise="trusted", functions="masked", rng=RandomSource.seeded(15), **common)  # type: ignore[arg-type]
    masked.fit(data, GROUPS)
    np.testing.assert_allclose(masked.posterior_.mu, secure.posterior_.mu, atol=1e-4)


_FORKED_FIT = """
import numpy as np
import mpdp.learning.dpvi.model as dpvi_module
from mpdp.datasets.synthetic import mixed_tabular
from mpdp.learning.dpvi.model import VerticalDPVI
from mpdp.randomness import RandomSource
from mpdp.runtime import run_protocol

data = mixed_tabular(160, numeric=2, categorical=2, categories=3, rng=RandomSource.seeded(11))
groups = (("num0", "cat0"), ("num1", "cat1", "y"))
common = dict(components=2, epochs=1, batch_size=80, epsilon=None, noise_multiplier=0.5, noise="trusted",
              batching="disjoint")
greenlets = VerticalDPVI(rng=RandomSource.seeded(17), **common).fit(data, groups)
runs = []
def spy(*args, **kwargs):
    runs.append(tuple(kwargs["forked"]))
    return run_protocol(*args, **kwargs)
dpvi_module.run_protocol = spy
forked = VerticalDPVI(rng=RandomSource.seeded(17), fork_services=True, **common).fit(data, groups)
print(runs, np.array_equal(forked.posterior_.mu, greenlets.posterior_.mu),
      np.array_equal(forked.posterior_.omega, greenlets.posterior_.omega),
      forked.communication_ == greenlets.communication_)
"""


def test_forked_services_give_the_same_posterior() -> None:
    # the dealer and the trusted noise party forked, the data parties greenlets: bit for bit the default run.
    # In a fresh interpreter: fork_services refuses a process running other threads, as a test session may.
    done = subprocess.run([sys.executable, "-c", _FORKED_FIT], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[('dealer',", "'noise')]", "True", "True", "True"]


def test_an_unknown_comparison_method_is_refused() -> None:
    with pytest.raises(ParameterError, match="comparisons"):
        VerticalDPVI(comparisons="bits")


def test_forked_services_are_refused_where_a_fork_is_unsafe(data: Dataset) -> None:
    with pytest.raises(ParameterError, match="fork_services"):
        VerticalDPVI(processes=True, fork_services=True)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:  # a fork would copy the other thread's locks: refused before any work
        with pytest.raises(ParameterError, match="threads"):
            VerticalDPVI(components=2, epochs=1, batch_size=80, epsilon=None, noise_multiplier=0.5,
                         fork_services=True).fit(data, GROUPS)
    finally:
        release.set()
        other.join()


def test_bad_input_is_refused(data: Dataset) -> None:
    with pytest.raises(ParameterError, match="batch_size"):
        DPVI(components=2, epochs=1, batch_size=1000, noise_multiplier=1.0, epsilon=None).fit(data)
    with pytest.raises(ParameterError, match="exactly one"):
        DPVI(epsilon=1.0, noise_multiplier=1.0)
    with pytest.raises(ParameterError, match="noise"):
        VerticalDPVI(noise="tee")
    with pytest.raises(ParameterError, match="partition"):
        VerticalDPVI(components=2, epochs=1, batch_size=80, noise_multiplier=1.0, epsilon=None).fit(
            data, (("num0", "cat0"), ("num1",)))
    with pytest.raises(ParameterError, match="not fitted"):
        DPVI(epsilon=1.0).nll(data)
    fitted = DPVI(components=2, epochs=1, batch_size=80, noise_multiplier=0.0, epsilon=None,
                  rng=RandomSource.seeded(2)).fit(data)
    unseen = Dataset(name=data.name, X=data.X, y=data.y, feature_names=data.feature_names, task=data.task,
                     attributes=data.attributes, values=np.where(np.arange(data.values.shape[1]) == 2, 7.0,
                                                                 data.values),
                     encoded_columns=data.encoded_columns, label_name=data.label_name, groups=data.groups)
    with pytest.raises(DomainError, match="categories seen at fit time"):
        fitted.nll(unseen)
    assert isinstance(fitted.model_, MixtureModel)


def test_ledgers_are_charged_before_training_and_refuse_all_or_nothing(data: Dataset) -> None:
    common = {"components": 2, "epochs": 1, "batch_size": 80, "epsilon": 1.0, "delta": 1e-5,
              "party_names": ("bank", "clinic")}
    analyst = PrivacyLedger(epsilon=1.5, delta=1e-5, subject="dataset")
    parties = {name: PrivacyLedger(epsilon=1e3, delta=1e-5, subject=f"party:{name}") for name in ("bank", "clinic")}
    model = VerticalDPVI(ledger=analyst, party_ledgers=parties, rng=RandomSource.seeded(30), **common)
    model.fit(data, GROUPS)
    assert analyst.spent.epsilon == pytest.approx(model.privacy_.epsilon)
    for name, ledger in parties.items():
        assert ledger.spent.epsilon == pytest.approx(model.privacy_.per_party[name])
    # the analyst's budget cannot pay a second fit: refused before any message, nothing recorded anywhere
    again = VerticalDPVI(ledger=analyst, party_ledgers=parties, rng=RandomSource.seeded(31), **common)
    with pytest.raises(BudgetExceededError, match="budget"):
        again.fit(data, GROUPS)
    assert not hasattr(again, "posterior_") and len(analyst.entries) == 1
    # a party's budget refuses: the analyst's ledger stays as it was
    fresh = PrivacyLedger(epsilon=5.0, delta=1e-5)
    tight = {"bank": PrivacyLedger(epsilon=1e3, delta=1e-5), "clinic": PrivacyLedger(epsilon=1.0, delta=1e-5)}
    with pytest.raises(BudgetExceededError, match="budget"):
        VerticalDPVI(ledger=fresh, party_ledgers=tight, rng=RandomSource.seeded(32), **common).fit(data, GROUPS)
    assert fresh.entries == () and tight["bank"].entries == ()
    with pytest.raises(ParameterError, match="party_ledgers"):
        VerticalDPVI(party_ledgers={"mallory": fresh}, **common).fit(data, GROUPS)
