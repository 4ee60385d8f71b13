"""Env parameters, declared once: the constructor checks, the hints, the docs and the server's schema.

An env class lists the constructor arguments it wants checked as ``Param`` objects in a class
attribute ``PARAMS``, and calls :func:`check_params` first thing in ``__init__``::

    class TowerofHanoiEnv(Env):
        PARAMS = (
            Param("num_disks", int, "disks on the first tower", min=1, max=12, nullable=True),
            Param("max_turns", int, "moves before the episode is cut", min=1, nullable=True,
                  client={"max": 10_000}),
        )

        def __init__(self, num_disks=3, max_turns=100):
            check_params(self, locals())
            ...

Everything else is derived from that declaration: the ``ValueError`` a constructor raises for a
bad value (naming the parameter and its bounds), the "did you mean" hint ``gem.make`` gives for a
misspelt name, ``gem list --params``, the table in docs/env-params.md, and the schema ``gem serve``
checks a client's kwargs against (:mod:`gem.server.schema`). ``client`` says what a network client
may set: ``True`` (the default) the same range, ``False`` nothing (datasets, files, sandboxes and
worker pools are the operator's), or a mapping of narrower bounds (``{"max": 10_000}``,
``{"choices": ("scripted",)}``), which is what one request may cost a server.

Arguments that are not declared (objects, callables, datasets) are checked by the env's own code,
and a client can never set them. Defaults stay in the constructor's signature, where Python and
``inspect`` see them; the docs table reads them from there.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Union

__all__ = ["Param", "check_params", "declared_params", "client_params", "params_table", "json_schema"]

_TYPES = (int, float, bool, str, tuple)
_CLIENT_FIELDS = ("min", "max", "choices", "nullable", "length")


@dataclass(frozen=True)
class Param:
    """One constructor argument: its type, bounds and what it does.

    Attributes:
        name: the keyword argument.
        type: ``int``, ``float`` (ints are accepted too), ``bool``, ``str`` or ``tuple`` (a list of
            ints; where one item is allowed, a bare int stands for a one-item list).
        description: one line for the docs table and ``gem list --params``.
        min, max: inclusive bounds of a number (of each item of a ``tuple``).
        min_exclusive: ``min`` itself is refused (a positive number of seconds: ``min=0``).
        choices: the only values allowed.
        nullable: ``None`` is allowed (for most games: draw the setting per episode).
        length: ``(fewest, most)`` items of a ``tuple``.
        client: whether a network client may set it (``gem serve``): ``True`` within the same
            bounds, ``False`` never, or a mapping that narrows ``min``/``max``/``choices``/
            ``nullable``/``length`` for clients.
    """

    name: str
    type: type
    description: str = ""
    min: Optional[float] = None
    max: Optional[float] = None
    min_exclusive: bool = False
    choices: Optional[tuple[Any, ...]] = None
    nullable: bool = False
    length: Optional[tuple[int, int]] = None
    client: Union[bool, Mapping[str, Any]] = True

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise TypeError(f"Param {self.name!r}: type must be one of int, float, bool, str, tuple; got {self.type!r}.")
        if self.type is tuple and self.length is None:
            raise TypeError(f"Param {self.name!r}: a tuple param needs length=(fewest, most).")
        if self.choices is not None and not isinstance(self.choices, tuple):
            object.__setattr__(self, "choices", tuple(self.choices))
        if isinstance(self.client, Mapping):
            unknown = sorted(set(self.client) - set(_CLIENT_FIELDS))
            if unknown:
                raise TypeError(f"Param {self.name!r}: client may narrow {', '.join(_CLIENT_FIELDS)}; got {unknown}.")

    # ------------------------------------------------------------------ checking
    def accepts(self, value: Any) -> bool:
        """Whether ``value`` fits the type, bounds and choices."""
        if value is None:
            return self.nullable
        if self.type is bool:
            ok = isinstance(value, bool)
        elif self.type is int:
            ok = _is_int(value) and self._in_range(value)
        elif self.type is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and self._in_range(value)
        elif self.type is str:
            ok = isinstance(value, str)
        else:
            items = self._items(value)
            ok = items is not None and all(_is_int(v) and self._in_range(v) for v in items)
        return ok and (self.choices is None or value in self.choices)

    def check(self, value: Any, *, json: bool = False) -> Any:
        """``value`` normalised (a float for ``float``, a tuple for ``tuple``), or ``ValueError``
        saying what is allowed (in JSON's words with ``json=True``, as a server's client reads them)."""
        if not self.accepts(value):
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise ValueError(f"{self.name} must be {self.describe(json=json)}, got {shown}.")
        if value is None:
            return None
        if self.type is float:
            return float(value)
        if self.type is tuple:
            return tuple(self._items(value) or ())
        return value

    def describe(self, json: bool = False) -> str:
        """What is allowed, in words: ``an int from 1 to 12 (or None)``."""
        integer = "an integer" if json else "an int"
        if self.choices is not None:
            shown = (repr(c) if json else str(c) for c in self.choices)
            text = "one of " + ", ".join(shown)
        elif self.type is bool:
            text = "true or false" if json else "True or False"
        elif self.type is str:
            text = "a string"
        elif self.type is tuple:
            lo, hi = self.length or (0, 0)
            count = f"{lo}" if lo == hi else f"{lo} to {hi}"
            text = f"a list of {count} {'integers' if json else 'ints'}" + self._span()
            if lo <= 1:
                text += f" (or one {'integer' if json else 'int'})"
        else:
            text = (integer if self.type is int else "a number") + self._span()
        return text + ((" (or null)" if json else " (or None)") if self.nullable else "")

    def for_client(self) -> Optional["Param"]:
        """What a network client may send: this param narrowed by ``client``, or ``None``."""
        if self.client is False:
            return None
        if self.client is True:
            return dataclasses.replace(self)
        narrowed = dict(self.client)
        if "min" in narrowed:  # a client's own lower bound is inclusive
            narrowed.setdefault("min_exclusive", False)
        return dataclasses.replace(self, client=True, **narrowed)

    def json_schema(self) -> dict[str, Any]:
        """This param as JSON Schema (draft 2020-12)."""
        names = {bool: "boolean", int: "integer", float: "number", str: "string"}
        if self.type is tuple:
            item: dict[str, Any] = {"type": "integer", **self._bounds()}
            schema: dict[str, Any] = {"type": "array", "items": item,
                                      "minItems": self.length[0], "maxItems": self.length[1]}  # type: ignore[index]
            if self.length[0] <= 1:  # type: ignore[index]
                schema = {"anyOf": [schema, item]}
        else:
            schema = {"type": names[self.type], **(self._bounds() if self.type in (int, float) else {})}
        if self.choices is not None:
            schema["enum"] = list(self.choices)
        if self.nullable:
            schema = {"anyOf": [schema, {"type": "null"}]}
        if self.description:
            schema["description"] = self.description
        return schema

    # ------------------------------------------------------------------ helpers
    def _in_range(self, value: float) -> bool:
        if self.min is not None and (value <= self.min if self.min_exclusive else value < self.min):
            return False
        return self.max is None or value <= self.max

    def _items(self, value: Any) -> Optional[tuple[Any, ...]]:
        lo, hi = self.length or (0, 0)
        if lo <= 1 and _is_int(value):
            return (value,)
        if isinstance(value, (list, tuple)) and lo <= len(value) <= hi:
            return tuple(value)
        return None

    def _span(self) -> str:
        lo, hi = _num(self.min), _num(self.max)
        if lo and hi:
            return f" from {lo} to {hi}"
        if lo:
            return f" above {lo}" if self.min_exclusive else f" of at least {lo}"
        if hi:
            return f" of at most {hi}"
        return ""

    def _bounds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.min is not None:
            out["exclusiveMinimum" if self.min_exclusive else "minimum"] = self.min
        if self.max is not None:
            out["maximum"] = self.max
        return out


def _num(value: Optional[float]) -> str:
    """A bound in words: ``10000``, ``0.1``; empty for none."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def declared_params(factory: Any) -> Optional[tuple[Param, ...]]:
    """The ``PARAMS`` an env class (or an instance) declares, or ``None`` if it declares none."""
    declared = getattr(factory, "PARAMS", None)
    if declared is None:
        return None
    declared = tuple(declared)
    for p in declared:
        if not isinstance(p, Param):
            raise TypeError(f"{getattr(factory, '__qualname__', factory)}.PARAMS holds {p!r}, not a Param.")
    return declared


def check_params(env: Any, values: Mapping[str, Any]) -> None:
    """Check the values in ``values`` (``locals()`` of ``__init__``) that ``env``'s class declares;
    ``ValueError`` naming the parameter and what it allows for the first bad one.

    A name is checked against the nearest class of ``env``'s MRO that declares it, so a base
    class's ``__init__`` checks its own params even for a subclass that declares others.
    """
    cls = env if isinstance(env, type) else type(env)
    seen: set[str] = set()
    for klass in cls.__mro__:
        for p in klass.__dict__.get("PARAMS", ()):
            if p.name not in seen:
                seen.add(p.name)
                if p.name in values:
                    p.check(values[p.name])


def client_params(params: Iterable[Param]) -> dict[str, Param]:
    """``{name: param}`` of what a network client may set, narrowed to the client's bounds."""
    out = {}
    for p in params:
        view = p.for_client()
        if view is not None:
            out[p.name] = view
    return out


def json_schema(params: Iterable[Param], extra: Optional[Mapping[str, Param]] = None) -> dict[str, Any]:
    """A JSON Schema object accepting exactly ``params`` (and ``extra``), nothing else."""
    every = {p.name: p for p in params}
    every.update(extra or {})
    return {
        "type": "object",
        "properties": {name: p.json_schema() for name, p in every.items()},
        "additionalProperties": False,
    }


def _defaults(factory: Callable[..., Any]) -> dict[str, Any]:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}


def param_rows(factory: Callable[..., Any]) -> list[tuple[str, str, str, str, str]]:
    """``(name, default, allowed, client, description)`` per declared param of ``factory``."""
    defaults = _defaults(factory)
    rows = []
    for p in declared_params(factory) or ():
        view = p.for_client()
        client = "no" if view is None else ("yes" if view == p else view.describe())
        default = repr(defaults[p.name]) if p.name in defaults else "required"
        rows.append((p.name, default, p.describe(), client, p.description))
    return rows


def params_table(factories: Mapping[str, Callable[..., Any]]) -> str:
    """A Markdown section per ``{title: env class}`` with a table of its declared params."""
    parts = []
    for title, factory in factories.items():
        rows = param_rows(factory)
        if not rows:
            continue
        lines = [f"### {title}", "", "| name | default | allowed | a client may set | what it does |",
                 "|---|---|---|---|---|"]
        for row in rows:
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def max_turns_param(
    description: str = "turns before the episode is cut (truncated)",
    *,
    min: int = 1,  # noqa: A002 - the Param field's name
    nullable: bool = True,
    client_max: Optional[int] = 10_000,
) -> Param:
    """The ``max_turns`` param most games share: at least ``min``, ``None`` draws it per episode
    where ``nullable``, and a client may ask for at most ``client_max`` (what a server affords)."""
    client: Union[bool, Mapping[str, Any]] = True if client_max is None else {"max": client_max}
    return Param("max_turns", int, description, min=min, nullable=nullable, client=client)
