"""Plugin settings: a frozen dataclass per plugin, checked by the core with one error format.

A plugin declares the keys its ``[plugins.NAME]`` table may hold as the fields of a frozen
dataclass; `setting()` adds the range of a number or a check of the value::

    @dataclass(frozen=True)
    class LinksSettings:
        max_parse_size: int = setting(4 * 1024 * 1024, low=1, high=1 << 32)
        discover: bool = True

and reads its table, checked, with ``config.plugin_settings("links", LinksSettings)``.
A field's type is what its value may be: bool, int, float, str, Path, an Enum or a
Literal of strings, or a tuple of those (a TOML list).  Every problem is one ConfigError
line, ``[plugins.links] max_parse_sise: unknown key; did you mean 'max_parse_size'?``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SettingsT = TypeVar("SettingsT", bound="DataclassInstance")

Check = Callable[[Any], str | None]
"""Says why a value of the right type is still refused, or returns None to accept it."""

_CONSTRAINT = "archiver.setting"


@dataclasses.dataclass(frozen=True)
class Constraint:
    """What `setting()` adds to a field, checked by `parse_settings` after the type."""

    low: float = -math.inf
    high: float = math.inf
    check: Check | None = None


def setting(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    low: float = -math.inf,
    high: float = math.inf,
    check: Check | None = None,
) -> Any:
    """A settings field; a number outside `low`..`high`, or a value `check` refuses, is an error."""
    metadata = {_CONSTRAINT: Constraint(low, high, check)}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def constraint_of(field: dataclasses.Field[Any]) -> Constraint:
    """The bounds and check of a settings field (none for a plain field)."""
    found = field.metadata.get(_CONSTRAINT)
    return found if isinstance(found, Constraint) else Constraint()


def parse_settings(
    name: str, cls: type[SettingsT], table: Mapping[str, Any], *, where: str | None = None
) -> SettingsT:
    """`table`, the ``[plugins.NAME]`` table (or the one `where` names), checked against the dataclass `cls`.

    Raises ConfigError ``[plugins.NAME] key: why`` for the first bad key or value.
    """
    where = where or f"[plugins.{name}]"
    fields = {field.name: field for field in dataclasses.fields(cls) if field.init}
    types = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in table.items():
        field = fields.get(key)
        if field is None:
            hint = did_you_mean(key, fields) or f"; known keys: {', '.join(fields) or 'none'}"
            raise ConfigError(f"{where} {key}: unknown key{hint}")
        try:
            values[key] = checked(value, types[key], constraint_of(field))
        except ValueError as exc:
            raise ConfigError(f"{where} {key}: {exc}") from None
    return cls(**values)


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate a typo of `word` most likely meant, if one is close enough."""
    import difflib  # only a mistake needs it, and every command imports this module

    match = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return match[0] if match else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the closest candidate, or '' when none is close."""
    match = closest(word, candidates)
    return f"; did you mean {match!r}?" if match else ""


def checked(value: Any, kind: Any, constraint: Constraint = Constraint()) -> Any:
    """`value` as TOML gave it, turned into `kind` and checked; ValueError says why it cannot be."""
    value = coerce(value, kind)
    if kind in (int, float):
        problem = number_problem(value, constraint.low, constraint.high)
        if problem:
            raise ValueError(problem)
    if constraint.check is not None:
        problem = constraint.check(value)
        if problem:
            raise ValueError(problem)
    return value


_PLURALS = {bool: "true or false", int: "whole numbers", float: "numbers", str: "strings", Path: "paths"}


def coerce(value: Any, kind: Any) -> Any:
    """`value` as `kind` (ints are taken for floats, a string for a list of one); ValueError otherwise."""
    if typing.get_origin(kind) is tuple:
        item_kind = typing.get_args(kind)[0]
        wrong = f"expected a list of {_PLURALS.get(item_kind, 'values')}, got {value!r}"
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ValueError(wrong)
        try:
            return tuple(coerce(item, item_kind) for item in items)
        except ValueError:
            raise ValueError(wrong) from None
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number, got {value!r}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if kind is str or kind is Path:
        if not isinstance(value, str):
            raise ValueError(f"expected a {'path' if kind is Path else 'string'}, got {value!r}")
        return kind(value)
    if typing.get_origin(kind) is typing.Literal:
        return _choose(value, {str(choice): choice for choice in typing.get_args(kind)})
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _choose(value, {str(member.value): member for member in kind})
    raise TypeError(f"a setting cannot be of type {kind!r}")


def _choose(value: Any, choices: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value in choices:
        return choices[value]
    shown = ", ".join(repr(choice) for choice in choices)
    hint = did_you_mean(value, choices) if isinstance(value, str) else ""
    raise ValueError(f"expected one of {shown}, got {value!r}{hint}")


def _shown(bound: float) -> str:
    return str(int(bound)) if math.isfinite(bound) and bound == int(bound) else str(bound)


def patterns_problem(patterns: tuple[str, ...]) -> str | None:
    """A `check` for a list of regular expressions: the first that does not compile."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"invalid regular expression {pattern!r}: {exc}"
    return None


def number_problem(value: float, low: float, high: float) -> str | None:
    """Why `value` is not a finite number from `low` to `high` (the text gives the range), or None."""
    allowed = f" ({_shown(low)} to {_shown(high)})" if math.isfinite(low) and math.isfinite(high) else ""
    if not math.isfinite(value):
        limit = allowed or (f" (at most {_shown(high)})" if math.isfinite(high) else "")
        return f"must be a finite number{limit}, got {value}"
    if value < low:
        return f"must be at least {_shown(low)}{allowed}, got {value}"
    if value > high:
        return f"must be at most {_shown(high)}{allowed}, got {value}"
    return None
