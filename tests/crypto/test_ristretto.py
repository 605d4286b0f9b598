from __future__ import annotations

import pytest

from mpdp.crypto.ristretto import ELEMENT_BYTES, exponentiate, hash_to_group, random_scalar, split_elements, validate
from mpdp.errors import InvalidGroupElementError, ParameterError
from mpdp.randomness import RandomSource

MESSAGES = [f"id-{i}".encode() for i in range(300)]


def test_exponentiation_commutes_and_threads_do_not_change_results(rng: RandomSource) -> None:
    a, b = random_scalar(rng), random_scalar(rng)
    points = hash_to_group(MESSAGES, domain=b"test", workers=1)
    assert points == hash_to_group(MESSAGES, domain=b"test", workers=3)
    ab = exponentiate(exponentiate(points, a, workers=2), b, workers=1)
    assert ab == exponentiate(exponentiate(points, b, workers=3), a)
    assert len(set(split_elements(ab))) == len(MESSAGES)
    assert validate(ab) == len(MESSAGES)


def test_hash_depends_on_message_and_domain() -> None:
    one = split_elements(hash_to_group([b"x", b"y"], domain=b"a"))
    assert one[0] != one[1]
    assert hash_to_group([b"x"], domain=b"a") != hash_to_group([b"x"], domain=b"b")


def test_seeded_scalars_repeat_and_are_nonzero() -> None:
    assert random_scalar(RandomSource.seeded(1)) == random_scalar(RandomSource.seeded(1))
    assert any(random_scalar(RandomSource.seeded(2)))


@pytest.mark.parametrize("bad", [bytes(ELEMENT_BYTES), b"\xff" * ELEMENT_BYTES, b"\x01" + bytes(31)])
def test_invalid_elements_are_refused_with_their_position(rng: RandomSource, bad: bytes) -> None:
    points = hash_to_group(MESSAGES[:5], domain=b"t")
    batch = points[:64] + bad + points[64:]
    with pytest.raises(InvalidGroupElementError, match=r"points\[2\]"):
        exponentiate(batch, random_scalar(rng))
    if bad != bytes(ELEMENT_BYTES):  # the identity is a valid encoding; only exponentiation refuses it
        with pytest.raises(InvalidGroupElementError, match=r"points\[2\]"):
            validate(batch)


def test_batches_of_partial_elements_and_bad_scalars_are_refused(rng: RandomSource) -> None:
    points = hash_to_group(MESSAGES[:2], domain=b"t")
    with pytest.raises(InvalidGroupElementError, match="multiple of 32"):
        exponentiate(points[:-1], random_scalar(rng))
    with pytest.raises(InvalidGroupElementError, match="bytes"):
        validate([points])  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="scalar"):
        exponentiate(points, b"short")
    with pytest.raises(ParameterError, match="workers"):
        exponentiate(points, random_scalar(rng), workers=0)
