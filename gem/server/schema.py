"""What a network client may pass to an env's constructor: the env's declared params.

A server builds envs from client requests, and constructor kwargs decide how much work an env
does (``code_length=100000000`` would make Mastermind build a table of 6**100000000 codes) and what
it touches (``dataset_name="/etc/..."`` reads a file of the client's choosing). So ``gem serve``
checks every client kwarg *before* anything is built, against the params the env class declares
(``PARAMS``, see :mod:`gem.params`): only the params a client may set (``client=``), within the
client's bounds. Unknown names, wrong types and out-of-range values are refused with a message
naming the valid range. There is no separate table here: the env's declaration is the one source.

An env that declares no params accepts no client kwargs, unless the operator allows it
(``ClientKwargs.TYPED``: the types of the constructor's defaults, no bounds; ``ClientKwargs.ANY``:
no checks, for trusted clients only), or declares a schema for it here, for an env whose code
the operator does not own (a plugin)::

    declare("mypkg.envs:MyEnv", max_turns=Int(1, 100), hard=Bool())

``seed`` is accepted for every env (``make_vec`` sends each env its seed).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from gem.envs.registration import EnvSpec
from gem.params import Param, client_params, declared_params, json_schema

MAX_SEED = 2**63 - 1


class KwargsError(ValueError):
    """A client kwarg that the env's schema refuses; the message names the valid values."""


class ClientKwargs(str, enum.Enum):
    """How a server treats kwargs for envs that declare no schema."""

    DECLARED = "declared"  # only envs with declared params take kwargs (the default)
    TYPED = "typed"  # undeclared envs: scalars of their constructor defaults' types, no bounds
    ANY = "any"  # no checks at all (trusted clients only)


# Shorthands for declare(): a Param without a name (declare names it).
def Int(low: Optional[int] = None, high: Optional[int] = None, nullable: bool = False) -> Param:  # noqa: N802
    return Param("", int, min=low, max=high, nullable=nullable)


def Float(low: Optional[float] = None, high: Optional[float] = None, nullable: bool = False) -> Param:  # noqa: N802
    return Param("", float, min=low, max=high, nullable=nullable)


def Bool(nullable: bool = False) -> Param:  # noqa: N802
    return Param("", bool, nullable=nullable)


def Choice(*values: Any, nullable: bool = False) -> Param:  # noqa: N802
    kind = str if all(isinstance(v, str) for v in values) else int
    return Param("", kind, choices=tuple(values), nullable=nullable)


def IntTuple(low: int, high: int, length: tuple[int, int], nullable: bool = False) -> Param:  # noqa: N802
    return Param("", tuple, min=low, max=high, nullable=nullable, length=length)


Schema = Mapping[str, Param]
TURNS = Int(1, 10_000)  # kept for code that declared schemas with these names
TURNS_OR_RANDOM = Int(1, 10_000, nullable=True)
SEED = Param("seed", int, "seeds the env's generators", min=0, max=MAX_SEED, nullable=True)

# Schemas the operator declared with declare(), by entry point and by id; they win over the
# env's own declaration. The built-in envs declare theirs on their classes (PARAMS).
SCHEMAS: dict[str, dict[str, Param]] = {}
_BY_ID: dict[str, dict[str, Param]] = {}


def declare(target: Union[str, Callable[..., Any]], **params: Param) -> None:
    """Declare the client kwargs of an entry point (``"module:Class"`` or the class) or an env id.

    For envs whose code you do not own; an env you write declares ``PARAMS`` on its class instead.
    Ids win over entry points, and both win over the class's own declaration.
    """
    for name, param in params.items():
        if not isinstance(param, Param):
            raise TypeError(f"{name}: expected a Param (Int, Float, Bool, Choice, IntTuple), got {param!r}.")
    named = {name: dataclasses.replace(param, name=name) for name, param in params.items()}
    if isinstance(target, str) and target in _registered_ids():
        _BY_ID[target] = named
    else:
        SCHEMAS[_entry_point_name(target)] = named


def _registered_ids() -> set[str]:
    from gem.envs.registration import registry

    return set(registry)


def _entry_point_name(entry_point: Any) -> str:
    if isinstance(entry_point, str):
        return entry_point
    return f"{entry_point.__module__}:{entry_point.__qualname__}"


def declared_schema(spec: EnvSpec) -> Optional[dict[str, Param]]:
    """What a client may set for ``spec``: declared here (by id, then entry point), else derived
    from the env class's ``PARAMS``; ``None`` if nothing is declared (or the class cannot load)."""
    if spec.id in _BY_ID:
        return _BY_ID[spec.id]
    name = _entry_point_name(spec.entry_point)
    if name in SCHEMAS:
        return SCHEMAS[name]
    try:
        factory = spec.load()
    except Exception:  # noqa: BLE001 - an env that cannot load cannot be built: it takes no kwargs
        return None
    declared = declared_params(factory)
    return None if declared is None else client_params(declared)


def kwargs_json_schema(spec: EnvSpec, mode: Union[ClientKwargs, str] = ClientKwargs.DECLARED) -> dict[str, Any]:
    """The JSON Schema of the kwargs a client may send for ``spec`` (``seed`` included), as
    :func:`check_kwargs` checks them in ``mode``."""
    mode = ClientKwargs(mode)
    if mode is ClientKwargs.ANY:
        return {"type": "object"}
    schema = declared_schema(spec)
    if schema is None and mode is ClientKwargs.TYPED:
        schema = typed_schema(spec.load())
    return json_schema((schema or {}).values(), {"seed": SEED})


def typed_schema(factory: Callable[..., Any]) -> dict[str, Param]:
    """Scalar kwargs of ``factory``'s signature with the type of their default, unbounded."""
    kinds = (bool, int, float, str)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    schema = {}
    for name, p in params.items():
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and type(p.default) in kinds:
            schema[name] = Param(name, type(p.default))
    return schema


def _check(param: Param, value: Any, env_id: str) -> Any:
    try:
        return param.check(value, json=True)
    except ValueError as exc:
        raise KwargsError(f"{env_id}: {exc}") from None


def check_kwargs(
    spec: EnvSpec, kwargs: Any, mode: Union[ClientKwargs, str] = ClientKwargs.DECLARED
) -> dict[str, Any]:
    """The client's ``kwargs`` for ``spec``, checked; raises :class:`KwargsError` saying what is allowed."""
    mode = ClientKwargs(mode)
    if not isinstance(kwargs, dict):
        raise KwargsError(f"{spec.id}: kwargs must be a JSON object, got {type(kwargs).__name__}.")
    if mode is ClientKwargs.ANY:
        return dict(kwargs)
    schema = declared_schema(spec)
    if schema is None:
        if mode is ClientKwargs.TYPED:
            schema = typed_schema(spec.load())
        elif any(k != "seed" for k in kwargs):
            raise KwargsError(
                f"{spec.id} declares no kwargs a client may set, so this server accepts none "
                f"(got {', '.join(sorted(map(repr, kwargs)))}). Its env class can declare them (PARAMS, "
                "see gem.params), the operator can (gem.server.schema.declare) or allow them "
                "(gem serve --client-kwargs typed)."
            )
    checked: dict[str, Any] = {}
    for name, value in kwargs.items():
        if name == "seed":
            checked[name] = _check(SEED, value, spec.id)
            continue
        param = schema.get(name)
        if param is None:
            allowed = ", ".join(f"{k} ({p.describe(json=True)})" for k, p in sorted(schema.items())) or "none"
            raise KwargsError(f"{spec.id}: a client may not set {name!r}; it may set: {allowed}.")
        checked[name] = _check(param, value, spec.id)
    return checked


def undeclared(entry_points: Sequence[str]) -> list[str]:
    """The entry points in ``entry_points`` with no declared params (for tests and docs)."""
    from gem.envs.registration import EnvSpec as _Spec

    return [ep for ep in entry_points if declared_schema(_Spec(ep, ep)) is None]
