"""Typed checks of JSON configuration: a configuration file is checked against one declarative schema before
anything runs.

A :class:`Schema` names every key an object may hold, each with its :class:`Field` (a kind, whether it is
required, a default, an example); :meth:`Schema.check` returns the object with every value checked and
defaults filled in, or raises the first problem as a :class:`~mpdp.errors.ParameterError` (a value out of its
range as :class:`~mpdp.errors.DomainError`). Unknown keys are refused, with the closest known key suggested: a
misspelled ``"timout"`` never silently does nothing.

Every message names where the value sits (``where``: e.g. ``"party0's configuration cfg.json"``), the key
path, what was received, what was expected and the fix::

    >>> from mpdp.fields import Field, Number, Schema
    >>> Schema({"timeout": Field(Number(low=0, low_open=True), example=120)}).check({"timeout": "abc"}, "cfg")
    Traceback (most recent call last):
    ...
    mpdp.errors.ParameterError: cfg: "timeout": received 'abc', expected a number > 0. Fix: write "timeout": 120

JSON has no integers distinct from floats only by type: an integer field takes a JSON integer (``3``, never
``3.0`` nor ``true``); a number field takes an integer or a finite float (never a bool or a string).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from mpdp.errors import DomainError, ParameterError, explain

__all__ = ["Anything", "Boolean", "Custom", "Either", "Field", "Integer", "Kind", "ListOf", "MapOf", "Null", "Number",
           "Schema", "Text"]


def _path(path: str) -> str:
    return f'"{path}"' if path else "the configuration"


def _fail(where: str, path: str, received: Any, expected: str, example: Any, *, domain: bool = False) -> NoReturn:
    fix = f'write "{path.rsplit(".", 1)[-1]}": {json.dumps(example)}' if example is not None else \
        f"give {_path(path)} {expected}"
    cls = DomainError if domain else ParameterError
    error = cls(explain(f"{where}: {_path(path)}" if where else _path(path), received, expected, fix))
    error.field_path = path  # type: ignore[attr-defined]  # how deep the check got: Either reports the deepest
    raise error


class Kind:
    """What a value must be. ``check`` returns the value (normalised) or raises through ``_fail``."""

    expected = "a value"

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Integer(Kind):
    """A JSON integer (not a bool, not a float) in ``[low, high]``."""

    low: int | None = None
    high: int | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.low is not None and self.high is not None:
            return f"an integer in [{self.low}, {self.high}]"
        return "an integer" + (f" >= {self.low}" if self.low is not None else "") + (
            f" <= {self.high}" if self.high is not None else "")

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(where, path, value, self.expected, example)
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            _fail(where, path, value, self.expected, example, domain=True)
        return value


@dataclass(frozen=True)
class Number(Kind):
    """A finite JSON number (integer or float, not a bool) above ``low`` (strictly if ``low_open``), at most
    ``high``; returned as a float."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        text = "a number"
        if self.low is not None:
            text += f" {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            text += f" {'and ' if self.low is not None else ''}<= {self.high:g}"
        return text

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            _fail(where, path, value, self.expected, example)
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number) or (self.low is not None and (number < self.low or (
                self.low_open and number == self.low))) or (self.high is not None and number > self.high):
            _fail(where, path, value, self.expected, example, domain=True)
        return number


@dataclass(frozen=True)
class Boolean(Kind):
    expected = "true or false"

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if not isinstance(value, bool):
            _fail(where, path, value, self.expected, example)
        return value


@dataclass(frozen=True)
class Null(Kind):
    expected = "null"

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if value is not None:
            _fail(where, path, value, self.expected, example)
        return None


@dataclass(frozen=True)
class Anything(Kind):
    """Any JSON value (checked elsewhere, e.g. by another schema once its owner is known)."""

    expected = "a JSON value"

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        return value


@dataclass(frozen=True)
class Text(Kind):
    """A non-empty string, one of ``choices`` or matching ``pattern`` (described by ``describe``)."""

    choices: tuple[str, ...] | None = None
    pattern: str | None = None
    describe: str = "a non-empty string"

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"one of {list(self.choices)}" if self.choices is not None else self.describe

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if not isinstance(value, str) or not value:
            _fail(where, path, value, self.expected, example)
        if self.choices is not None and value not in self.choices:
            close = difflib.get_close_matches(value, self.choices, n=1)
            _fail(where, path, value, self.expected, close[0] if close else example, domain=True)
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            _fail(where, path, value, self.expected, example, domain=True)
        return value


@dataclass(frozen=True)
class ListOf(Kind):
    """A JSON array of ``item``s, ``min_len`` .. ``max_len`` long; ``unique`` refuses repeated items."""

    item: Kind
    min_len: int = 0
    max_len: int | None = None
    unique: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        size = f" of at least {self.min_len}" if self.min_len else ""
        return f"a list{size} of {self.item.expected}" + (" (each once)" if self.unique else "")

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if not isinstance(value, list | tuple):
            _fail(where, path, value, self.expected, example)
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            _fail(where, path, value, self.expected, example, domain=True)
        items = [self.item.check(v, where, f"{path}[{i}]", None) for i, v in enumerate(value)]
        if self.unique and len({json.dumps(v, sort_keys=True) for v in items}) != len(items):
            _fail(where, path, value, self.expected, example, domain=True)
        return items


@dataclass(frozen=True)
class MapOf(Kind):
    """A JSON object whose keys are ``key`` strings and values ``value``s (at least ``min_len`` entries)."""

    value: Kind
    key: Kind = field(default_factory=Text)
    min_len: int = 0

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an object {{{self.key.expected}: {self.value.expected}}}"

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        if not isinstance(value, Mapping) or len(value) < self.min_len:
            _fail(where, path, value, self.expected, example)
        out = {}
        for k, v in value.items():
            self.key.check(k, where, f"{path} key", None)
            out[k] = self.value.check(v, where, f"{path}.{k}" if path else k, None)
        return out


@dataclass(frozen=True)
class Either(Kind):
    """The first of ``kinds`` that accepts the value; refused with every alternative named."""

    kinds: tuple[Kind, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return " or ".join(k.expected for k in self.kinds)

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        errors: list[ParameterError] = []
        for kind in self.kinds:
            try:
                return kind.check(value, where, path, example)
            except ParameterError as exc:
                errors.append(exc)
        # an alternative that accepted the value's type and refused something inside it says what is wrong
        inner = [e for e in errors if len(getattr(e, "field_path", "")) > len(path) or isinstance(e, DomainError)]
        if inner:
            raise max(inner, key=lambda e: len(getattr(e, "field_path", "")))  # the first of the deepest
        _fail(where, path, value, self.expected, example)


@dataclass(frozen=True)
class Custom(Kind):
    """``base`` then ``test(value)``: a message (str) refuses the value, None accepts it."""

    base: Kind
    test: Callable[[Any], str | None]
    expected_text: str = ""

    @property
    def expected(self) -> str:  # type: ignore[override]
        return self.expected_text or self.base.expected

    def check(self, value: Any, where: str, path: str, example: Any) -> Any:
        value = self.base.check(value, where, path, example)
        problem = self.test(value)
        if problem is not None:
            _fail(where, path, value, problem, example, domain=True)
        return value


@dataclass(frozen=True)
class Field:
    """One key of a :class:`Schema`: its kind, whether it must be present, its default, an example for fixes."""

    kind: Kind
    required: bool = False
    default: Any = None
    example: Any = None
    help: str = ""


@dataclass(frozen=True)
class Schema(Kind):
    """A JSON object with the keys of ``fields`` (the required ones present). Unknown keys are refused, unless
    ``open``: then they are kept as they are (a section whose other keys another schema checks). :meth:`check`
    fills in the defaults of absent keys; an absent key whose default is None stays absent."""

    fields: Mapping[str, Field]
    name: str = "an object"
    open: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{self.name} with keys among {sorted(self.fields)}"

    def check(self, value: Any, where: str, path: str = "", example: Any = None) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            _fail(where, path, type(value).__name__, self.expected, example)
        prefix = f"{path}." if path else ""
        for key in value:
            if key not in self.fields and not self.open:
                close = difflib.get_close_matches(str(key), list(self.fields), n=1)
                hint = f'rename it "{close[0]}"' if close else "remove it"
                error = ParameterError(explain(f"{where}: {_path(prefix + str(key))}", "an unknown key",
                                               f"keys among {sorted(self.fields)}" if self.fields else
                                               f"no keys ({self.name} take none)", hint))
                error.field_path = prefix + str(key)  # type: ignore[attr-defined]
                raise error
        out: dict[str, Any] = {k: v for k, v in value.items() if k not in self.fields}
        for key, spec in self.fields.items():
            if key not in value:
                if spec.required:
                    error = ParameterError(explain(f"{where}: {_path(prefix + key)}", "missing",
                                                   spec.kind.expected + (f" ({spec.help})" if spec.help else ""),
                                                   f'add "{key}": {json.dumps(spec.example)}' if spec.example
                                                   is not None else f'add "{key}"'))
                    error.field_path = prefix + key  # type: ignore[attr-defined]
                    raise error
                if spec.default is not None:  # an absent key without a default stays absent
                    out[key] = spec.default
                continue
            out[key] = spec.kind.check(value[key], where, prefix + key, spec.example)
        return out

    def keys(self) -> list[str]:
        return list(self.fields)
