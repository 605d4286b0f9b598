"""Every audited release path at the CI budget: the real path's bound stays at or below its claim, and the
deliberately broken variant is flagged by the same audit at the same budget (the audit has teeth).

Fixed seeds. A real path's bound exceeds its claim with probability <= 5% by construction; the quick budgets
leave each broken variant a margin of >= 3 standard deviations of its estimate (adapters' docstrings), so a
fresh seed fails either assertion with probability below ~5% + 0.2% per case.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mpdp.audit.cases.noise import discrete_laplace_case
from mpdp.audit.registry import AUDITS, build
from mpdp.cli import main
from mpdp.errors import DomainError, ParameterError, PrivacyLeakWarning
from mpdp.randomness import RandomSource


@pytest.mark.parametrize("name", list(AUDITS))
def test_real_path_within_claim_and_broken_variant_flagged(name: str) -> None:
    samples = AUDITS[name].quick_samples
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        real = build(name).run(samples=samples, rng=RandomSource.seeded(f"audit/{name}"))
        broken = build(name, broken=True).run(samples=samples, rng=RandomSource.seeded(f"audit/{name}/broken"))
    assert real.lower_bound <= real.claimed_epsilon, real
    assert broken.claimed_epsilon == real.claimed_epsilon
    assert broken.flagged, broken


def test_unknown_audit_name_is_typed() -> None:
    with pytest.raises(ParameterError, match="one of"):
        build("no-such-mechanism")


def test_adapter_refuses_non_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    from mpdp.audit.cases import noise

    monkeypatch.setattr(noise, "D1", np.array([[0], [0]]))
    with pytest.raises(DomainError):
        discrete_laplace_case()


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["audit", "discrete-laplace", "--quick", "--json", "--seed", "3"]) == 0
    record = json.loads(capsys.readouterr().out)
    (row,) = record["audits"]
    assert set(row) >= {"claimed_epsilon", "lower_bound", "confidence", "samples_per_side", "seconds"}
    assert row["lower_bound"] <= row["claimed_epsilon"] and record["unexpected"] == []
    assert main(["audit", "discrete-laplace", "--broken", "--quick", "--json", "--seed", "3"]) == 0
    assert main(["audit"]) == 2
