"""Typed per-run room for plugins: ``crawl.stash[KEY]``, as pytest's `Stash`.

A plugin makes a module-level key once, ``FEEDER = StashKey[IndexFeeder]()``, stores its
per-run object with ``crawl.stash[FEEDER] = feeder`` and reads it back typed.  Keys are
objects, not strings: two plugins cannot collide, and mypy knows what each one holds.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")
D = TypeVar("D")


class StashKey(Generic[T]):
    """A key of a `Stash`; its type parameter is the type of the value stored under it."""

    __slots__ = ()


class Stash:
    """A map from `StashKey[T]` to `T`."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[StashKey[Any], object] = {}

    def __setitem__(self, key: StashKey[T], value: T) -> None:
        self._values[key] = value

    def __getitem__(self, key: StashKey[T]) -> T:
        return cast(T, self._values[key])

    def get(self, key: StashKey[T], default: D) -> T | D:
        return cast(T, self._values[key]) if key in self._values else default

    def setdefault(self, key: StashKey[T], default: T) -> T:
        return cast(T, self._values.setdefault(key, default))

    def pop(self, key: StashKey[T], default: D) -> T | D:
        return cast(T, self._values.pop(key)) if key in self._values else default

    def __delitem__(self, key: StashKey[T]) -> None:
        del self._values[key]

    def __contains__(self, key: StashKey[T]) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)
