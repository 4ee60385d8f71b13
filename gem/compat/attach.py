"""How the original GEM's names reach a main class: copied onto it by a class decorator, never as a base.

Each module of :mod:`gem.compat` that serves a main class holds a *table*, a class body listing the
original's names (methods, properties, constants) that the main class lacks, and a class decorator
built from it (``@math_env_compat``, ``@fifteen_puzzle_compat``, ...). The decorator sets each name
of the table on the main class (:func:`add_names`) and, where the original's constructor took
kwargs it ignored, lets the constructor take those too (:func:`gem.compat.kwargs.ignore_kwargs`).
The table is no base of the class: the class's MRO holds only main classes.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, TypeVar

from gem.compat.kwargs import ignore_kwargs

T = TypeVar("T", bound=type)


def table_names(table: type) -> dict[str, Any]:
    """The names a table defines (its dunder names left out)."""
    return {name: value for name, value in vars(table).items() if not name.startswith("__")}


def add_names(cls: type, table: type) -> None:
    """Set every name of ``table`` on ``cls``.

    A name that ``cls`` defines itself is an error (the table would replace the class's own); one
    that ``cls`` inherits from a class this table was added to is left as inherited.
    """
    for name, value in table_names(table).items():
        if name in vars(cls):
            raise TypeError(f"{cls.__name__} defines {name} itself; {table.__qualname__} would replace it.")
        if inspect.getattr_static(cls, name, None) is value:
            continue
        setattr(cls, name, value)


def decorator(*tables: type, ignored_kwargs: Iterable[str] = ()) -> Callable[[T], T]:
    """A class decorator that adds the names of ``tables`` and lets the constructor take and drop
    ``ignored_kwargs``."""
    dropped = tuple(ignored_kwargs)

    def attach(cls: T) -> T:
        for table in tables:
            add_names(cls, table)
        if dropped:
            ignore_kwargs(cls, dropped)
        return cls

    return attach
