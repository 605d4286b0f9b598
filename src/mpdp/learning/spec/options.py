"""An algorithm's options, written once: type, default, bounds, choices and help of each.

A :class:`Settings` subclass is a frozen dataclass whose fields are declared with :func:`option`::

    @dataclass(frozen=True)
    class OfaaSettings(Settings):
        lam: float = option(1e-4, "regulariser, mean form", low=0.0, low_open=True)
        max_rounds: int = option(10, "round limit", low=1)
        noise: str = option("once", "once (costs eps) or fresh (eps / max_rounds per round)",
                            choices=("once", "fresh"))

Every way an option reaches an algorithm goes through the same checks, so a value that one engine refuses is
refused by all of them with the same :class:`~mpdp.errors.ParameterError`:

* ``mpdp run/launch --option key=value`` and a Flower run config: :meth:`Settings.from_options` (strings are
  parsed by the declared type; JSON numbers and booleans are accepted as they are; unknown keys are refused);
* a deployed party's shared configuration: :meth:`Settings.to_public` on the launcher's side and
  :meth:`Settings.from_public` on the party's (the same keys, exactly);
* an estimator's constructor parameters and direct construction: ``__post_init__`` checks every field.

An option whose default depends on the data (a batch size of at most the row count, "all agents") is declared
with ``default=None`` and says in its help what None means; the algorithm resolves it at run time.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from mpdp.errors import ParameterError, explain

__all__ = ["OptionInfo", "Settings", "option"]

_META = "mpdp.option"
_TRUE = ("true", "yes", "1", "on")
_FALSE = ("false", "no", "0", "off")
_NONE = ("none", "null")


@dataclass(frozen=True)
class OptionInfo:
    """One option as users see it: its name, type, default, bounds, choices and help."""

    name: str
    kind: type  # int, float, bool or str
    default: Any
    help: str
    optional: bool = False  # None is a legal value (a data-dependent default)
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] = ()

    @property
    def expected(self) -> str:
        """What a legal value is, in words (the ``expected`` part of an error message)."""
        if self.choices:
            text = "one of " + ", ".join(str(c) for c in self.choices)
        elif self.kind is bool:
            text = "true or false"
        else:
            text = {int: "an integer", float: "a number", str: "a string"}[self.kind]
            if self.low is not None:
                text += f" {'>' if self.low_open else '>='} {_number(self.low)}"
            if self.high is not None:
                text += f"{',' if self.low is not None else ''} {'<' if self.high_open else '<='} {_number(self.high)}"
        return text + (" (or none for the default)" if self.optional else "")

    @property
    def default_text(self) -> str:
        return "none" if self.default is None else str(self.default).lower() if self.kind is bool \
            else _number(self.default) if self.kind in (int, float) else str(self.default)

    def describe(self) -> str:
        """One line for ``--list`` and the docs: name=default, the help and the legal values."""
        return f"{self.name}={self.default_text}  {self.help} [{self.expected}]"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.kind.__name__, "default": self.default, "help": self.help,
                "optional": self.optional, "low": self.low, "high": self.high, "low_open": self.low_open,
                "high_open": self.high_open, "choices": list(self.choices)}

    def coerce(self, value: Any, *, where: str) -> Any:
        """``value`` as this option's type, checked against its bounds and choices (strings parsed)."""
        if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
            if self.optional:
                return None
            raise ParameterError(explain(f"{where} {self.name}", value, self.expected, self._fix()))
        parsed = self._parse(value, where)
        if self.choices and parsed not in self.choices:
            raise ParameterError(explain(f"{where} {self.name}", value, self.expected, self._fix()))
        if self.kind in (int, float):
            number = float(parsed)
            too_low = self.low is not None and (number <= self.low if self.low_open else number < self.low)
            too_high = self.high is not None and (number >= self.high if self.high_open else number > self.high)
            if too_low or too_high:
                raise ParameterError(explain(f"{where} {self.name}", value, self.expected, self._fix()))
        return parsed

    def _fix(self) -> str:
        return f"pass e.g. {self.name}={self.default_text}" if self.default is not None else \
            f"pass e.g. {self.name}={self.choices[0]}" if self.choices else f"drop {self.name} for its default"

    def _parse(self, value: Any, where: str) -> Any:
        bad = ParameterError(explain(f"{where} {self.name}", value, self.expected, self._fix()))
        if isinstance(value, str):
            text = value.strip()
            if self.kind is str:
                return text
            if self.kind is bool:
                if text.lower() in _TRUE:
                    return True
                if text.lower() in _FALSE:
                    return False
                raise bad
            try:
                value = json.loads(text)
            except ValueError:
                raise bad from None
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            raise bad
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        if self.kind is str:  # pragma: no cover - strings returned above
            raise bad
        if not math.isfinite(value):
            raise bad
        if self.kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise bad
            return int(value)
        return float(value)


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def option(default: Any, help: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False, choices: tuple[Any, ...] = ()) -> Any:
    """A :class:`Settings` field: its default, one line of help, and what values are legal."""
    meta = {"default": default, "help": help, "low": low, "high": high, "low_open": low_open,
            "high_open": high_open, "choices": tuple(choices)}
    return dataclasses.field(default=default, metadata={_META: meta})


def _kind(annotation: Any, owner: type, name: str) -> tuple[type, bool]:
    """(base type, None allowed) of a field annotation such as ``int``, ``float | None`` or ``str``."""
    args = typing.get_args(annotation)
    optional = False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else None
    if annotation not in (int, float, bool, str):
        raise ParameterError(explain(f"{owner.__name__}.{name}", annotation, "int, float, bool or str, "
                                     "optionally | None", "declare the option with one of those types"))
    return annotation, optional


@dataclass(frozen=True)
class Settings:
    """Base of every algorithm's options (module docstring). Subclasses add fields with :func:`option`
    and may override :meth:`check` for rules that tie several options together."""

    #: the option names shown to users, in declaration order (filled per subclass on first use)
    _infos: ClassVar[dict[type, tuple[OptionInfo, ...]]] = {}

    def __post_init__(self) -> None:
        for info in self.options():
            value = getattr(self, info.name)
            checked = info.coerce(value, where=f"{type(self).__name__}")
            if checked != value or type(checked) is not type(value):
                object.__setattr__(self, info.name, checked)
        self.check()

    def check(self) -> None:
        """Rules across options (e.g. ``p <= h_max``); raise :class:`~mpdp.errors.ParameterError`."""

    @classmethod
    def options(cls) -> tuple[OptionInfo, ...]:
        """The declared options, in order."""
        cached = Settings._infos.get(cls)
        if cached is not None:
            return cached
        hints = typing.get_type_hints(cls)
        infos = []
        for f in dataclasses.fields(cls):
            meta = f.metadata.get(_META)
            if meta is None:
                raise ParameterError(explain(f"{cls.__name__}.{f.name}", "a plain field", "a field made by option()",
                                             "declare every Settings field with option(default, help, ...)"))
            kind, optional = _kind(hints[f.name], cls, f.name)
            infos.append(OptionInfo(f.name, kind, meta["default"], meta["help"], optional or meta["default"] is None,
                                    meta["low"], meta["high"], meta["low_open"], meta["high_open"], meta["choices"]))
        out = tuple(infos)
        Settings._infos[cls] = out
        return out

    @classmethod
    def own_options(cls) -> tuple[OptionInfo, ...]:
        """The options this class declares itself (not those it inherits)."""
        inherited = {n for base in cls.__mro__[1:] if isinstance(base, type) and issubclass(base, Settings)
                     and base is not Settings for n in base.names()}
        return tuple(i for i in cls.options() if i.name not in inherited)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(i.name for i in cls.options())

    @classmethod
    def defaults(cls) -> Self:
        """Every option at its default."""
        return cls()

    @classmethod
    def of_run(cls, settings: Settings | None, options: Mapping[str, Any] | None) -> Self:
        """A run's settings of this class: ``settings`` as given, or built from the plain ``options`` when the
        caller gave only those (a :class:`~mpdp.learning.spec.run.RunConfig`'s two fields); settings of another
        class are refused."""
        if settings is None:
            return cls.from_options(options)
        if not isinstance(settings, cls):
            raise ParameterError(explain("settings", type(settings).__name__, cls.__name__,
                                         "build the run's configuration with the algorithm's spec"))
        return settings

    @classmethod
    def from_options(cls, raw: Mapping[str, Any] | None, *, source: str = "--option") -> Self:
        """Settings from user-given ``key -> value`` pairs (missing keys take their defaults).

        ``source`` names where the values came from in error messages (``--option``, ``party configuration``,
        ``Flower run config``, an estimator's class name)."""
        given = dict(raw or {})
        known = cls.names()
        unknown = sorted(k for k in given if k not in known)
        if unknown:
            raise ParameterError(explain(f"{source} {', '.join(map(str, unknown))}", {k: given[k] for k in unknown},
                                         f"options among {list(known) or 'none'} for {cls.__name__}",
                                         "fix the key; `mpdp run --list` shows every algorithm's options"))
        infos = {i.name: i for i in cls.options()}
        values = {k: infos[k].coerce(v, where=source) for k, v in given.items()}
        return cls(**values)

    def changed(self, **values: Any) -> Self:
        """A copy with some options replaced (checked like any other)."""
        return dataclasses.replace(self, **values)

    def to_public(self) -> dict[str, Any]:
        """Every option as JSON-safe values, for a deployment's shared configuration."""
        return {i.name: getattr(self, i.name) for i in self.options()}

    @classmethod
    def from_public(cls, public: Mapping[str, Any], *, source: str = "shared configuration") -> Self:
        """The inverse of :meth:`to_public`: exactly the declared keys, each checked."""
        if not isinstance(public, Mapping):
            raise ParameterError(explain(f"{source} options", type(public).__name__, "an object of options",
                                         "use the shared section the launcher wrote"))
        missing = [n for n in cls.names() if n not in public]
        if missing:
            raise ParameterError(explain(f"{source} options", sorted(public), f"every option of {cls.__name__} "
                                         f"(missing {missing})", "use the shared section the launcher wrote"))
        return cls.from_options(public, source=source)

    def non_default(self) -> dict[str, Any]:
        """The options that differ from their defaults (what a user set, for a record)."""
        return {i.name: getattr(self, i.name) for i in self.options() if getattr(self, i.name) != i.default}
