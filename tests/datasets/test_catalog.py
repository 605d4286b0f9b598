from __future__ import annotations

import pytest

from mpdp.datasets import DATASETS, load_dataset
from mpdp.datasets.catalog import parse_spec
from mpdp.errors import ParameterError
from mpdp.randomness import RandomSource


def test_specs_parse_with_typed_defaults() -> None:
    assert parse_spec("synthetic-linear") == ("synthetic-linear", {"n": 80_000, "d": 800, "s": 0.1})
    assert parse_spec("synthetic-linear:n=100,s=0.5")[1] == {"n": 100, "d": 800, "s": 0.5}
    assert parse_spec("adult:target=age")[1]["target"] == "age"
    with pytest.raises(ParameterError, match=r"mpdp datasets list"):
        parse_spec("mnist")
    with pytest.raises(ParameterError, match="key=value with key in"):
        parse_spec("synthetic-linear:k=3")
    with pytest.raises(ParameterError, match="a int"):
        parse_spec("synthetic-linear:n=many")


@pytest.mark.parametrize("name", sorted(set(DATASETS) - {"adult"}))
def test_every_synthetic_entry_loads_small(name: str) -> None:
    small = {"synthetic-linear": "n=50,d=8", "synthetic-logistic": "n=50,d=3", "synthetic-mixed": "n=50"}[name]
    data = load_dataset(f"{name}:{small}", rng=RandomSource.seeded(1))
    assert data.n == 50 and data.attributes


def test_csv_options_are_refused_for_builtin_data() -> None:
    with pytest.raises(ParameterError, match="user's own table"):
        load_dataset("synthetic-mixed:n=20", label="y")


def test_adult_n_draws_a_seeded_uniform_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """``adult:n=K`` keeps K distinct records in file order, the same ones for the same data seed; 0 keeps all."""
    from mpdp.datasets import catalog
    from mpdp.datasets.synthetic import mixed_tabular

    full = mixed_tabular(300, rng=RandomSource.seeded(0))
    monkeypatch.setattr(catalog, "load_adult", lambda *args, **kwargs: full)
    sample = load_dataset("adult:n=50", rng=RandomSource.seeded(1))
    again = load_dataset("adult:n=50", rng=RandomSource.seeded(1))
    other = load_dataset("adult:n=50", rng=RandomSource.seeded(2))
    assert sample.n == 50 and (sample.X == again.X).all() and not (sample.X == other.X).all()
    rows = {tuple(r) for r in full.X.tolist()}
    assert all(tuple(r) in rows for r in sample.X.tolist())
    assert load_dataset("adult:n=0", rng=RandomSource.seeded(1)).n == 300
    assert load_dataset("adult:n=1000", rng=RandomSource.seeded(1)).n == 300
    with pytest.raises(ParameterError, match="adult:n=5000"):
        load_dataset("adult:n=-1", rng=RandomSource.seeded(1))
