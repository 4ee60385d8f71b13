"""The declared client-kwargs schemas: they match the constructors and bound the work."""

from __future__ import annotations

import inspect

import pytest

import gem
from gem.envs.registration import registry
from gem.server.schema import (
    SCHEMAS,
    Bool,
    ClientKwargs,
    Int,
    KwargsError,
    check_kwargs,
    declare,
    declared_schema,
)
from tests.conftest import extra_installed, needs_extra


def builtin_specs():
    """Every built-in id's spec (the registry's records: no env module is imported here)."""
    for env_id in gem.list_envs():  # ids served lazily (rg:) too
        try:
            gem.envs.registration.spec(env_id)
        except Exception:  # noqa: BLE001 - an optional dependency missing: its id is not served here
            pass
    return [s for s in registry.values() if isinstance(s.entry_point, str) and s.entry_point.startswith("gem.")]


def installed_specs():
    """The built-in specs whose extra is installed here (those whose classes can load)."""
    return [s for s in builtin_specs() if not s.extra or extra_installed(s.extra)]


def test_every_builtin_entry_point_declares_a_schema():
    specs = installed_specs()
    assert any(s.id == "game:GuessTheNumber-v0" for s in specs)  # the core's ids are always here
    missing = sorted({s.entry_point for s in specs if declared_schema(s) is None})
    assert missing == []
    assert SCHEMAS == {}  # no hand-written table: every built-in schema comes from its env's PARAMS


def builtin_entry_points():
    return sorted({s.entry_point for s in builtin_specs()})


def installed_spec(entry_point):
    """A spec of ``entry_point`` whose extra is installed here, or ``None``."""
    return next((s for s in installed_specs() if s.entry_point == entry_point), None)


def spec_of(entry_point):
    """A spec of ``entry_point`` whose extra is installed; the test skips (naming the extra) when
    every id of that class needs a missing one."""
    spec = installed_spec(entry_point)
    if spec is None:
        needs_extra(next(s.extra for s in builtin_specs() if s.entry_point == entry_point))
    return spec


@pytest.mark.parametrize("entry_point", builtin_entry_points())
def test_schema_names_and_types_match_the_constructor(entry_point):
    """Each declared kwarg is a constructor parameter, and the constructor's default passes."""
    spec = spec_of(entry_point)
    params = inspect.signature(spec.load()).parameters
    for name, param in declared_schema(spec).items():
        assert name in params, f"{entry_point} has no parameter {name!r}"
        default = params[name].default
        if default is not inspect.Parameter.empty:
            param.check(default, json=True)


def test_every_registered_default_passes_its_schema():
    """A client may send back exactly what an id's spec holds (the presets' own kwargs)."""
    for spec in installed_specs():
        schema = declared_schema(spec)
        sent = {k: v for k, v in spec.kwargs.items() if k in schema}
        assert check_kwargs(spec, sent) == {k: tuple(v) if isinstance(v, list) else v for k, v in sent.items()}


def test_refusals_name_the_valid_range():
    spec = gem.envs.registration.spec("game:Mastermind-v0-hard")
    with pytest.raises(KwargsError, match="code_length must be an integer from 1 to 8 .or null., got 100000000"):
        check_kwargs(spec, {"code_length": 100_000_000})
    with pytest.raises(KwargsError, match="max_turns must be an integer from 1 to 10000"):
        check_kwargs(spec, {"max_turns": 1.5})
    with pytest.raises(KwargsError, match="seed must be an integer"):
        check_kwargs(spec, {"seed": -1})
    with pytest.raises(KwargsError, match="kwargs must be a JSON object"):
        check_kwargs(spec, ["code_length"])
    sokoban = gem.envs.registration.spec("game:Sokoban-v0-easy")
    assert check_kwargs(sokoban, {"dim_room": [7, 7]}) == {"dim_room": (7, 7)}
    with pytest.raises(KwargsError, match="a list of 2 integers from 4 to 10"):
        check_kwargs(sokoban, {"dim_room": [7, 7, 7]})


@pytest.mark.parametrize("level", gem.core.REWARD_LEVELS)
def test_a_client_cannot_set_the_reward_levels(level):
    """Reward levels are kwargs of every id (for the trainer's own process), never a client's to set:
    a client that could raise success_reward or zero the penalties would decide its own reward."""
    for env_id in ("game:GuessTheNumber-v0", "math:Arithmetic", "code:Bundled"):
        spec = gem.envs.registration.spec(env_id)
        with pytest.raises(KwargsError, match=f"a client may not set {level!r}"):
            check_kwargs(spec, {level: 100.0})


def test_undeclared_envs_take_no_kwargs_unless_allowed():
    class Plain(gem.Env):
        def __init__(self, size: int = 3, name: str = "x", table: object = None):
            super().__init__()

    spec = gem.register("test:SchemaPlain-v0", Plain)
    try:
        assert check_kwargs(spec, {"seed": 4}) == {"seed": 4}
        with pytest.raises(KwargsError, match="declares no kwargs"):
            check_kwargs(spec, {"size": 4})
        assert check_kwargs(spec, {"size": 10**9}, ClientKwargs.TYPED) == {"size": 10**9}  # typed: no bounds
        with pytest.raises(KwargsError, match="size must be an integer"):
            check_kwargs(spec, {"size": "4"}, ClientKwargs.TYPED)
        with pytest.raises(KwargsError, match="may not set 'table'"):  # not a scalar default
            check_kwargs(spec, {"table": {}}, ClientKwargs.TYPED)
        assert check_kwargs(spec, {"table": {}}, ClientKwargs.ANY) == {"table": {}}
        declare("test:SchemaPlain-v0", size=Int(1, 5), loud=Bool())
        assert check_kwargs(spec, {"size": 5}) == {"size": 5}
        with pytest.raises(KwargsError, match="from 1 to 5"):
            check_kwargs(spec, {"size": 6})
    finally:
        registry.pop("test:SchemaPlain-v0", None)
        from gem.server import schema

        schema._BY_ID.pop("test:SchemaPlain-v0", None)


GAME_MAXIMA = {
    "game:Mastermind-v0-hard": {"code_length": 8, "num_numbers": 10, "duplicate_numbers": True},
    "game:Minesweeper-v0-easy": {"rows": 50, "cols": 50, "num_mines": 2499},
    "game:Sokoban-v0-easy": {"dim_room": [10, 10], "num_boxes": 4},
    "game:Sudoku-v0-easy": {"scale": 9, "clues": 1, "max_turns": 10_000},
    "game:FifteenPuzzle-v0-easy": {"num_rows": 6, "max_turns": 10_000},
    "game:TowerofHanoi-v0-easy": {"num_disks": 12, "max_turns": 10_000},
    "game:Game2048-v0-easy": {"board_size": 8, "target_tile": 2**17},
    "game:Crosswords-v0-easy": {"num_words": 8},
    "game:WordSearch-v0-easy": {"num_words": 20},
    "game:Wordle-v0-easy": {"word_length": 9},
    "game:Hangman-v0-easy": {"word_length": 9},
}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(GAME_MAXIMA))
def test_the_largest_allowed_values_build_and_reset(env_id):
    """The bounds are what a server can afford: the largest values build and reset (or are
    refused by the env's own checks with a ValueError), never hang."""
    if env_id not in registry:
        pytest.skip(f"{env_id} is not registered here")
    kwargs = check_kwargs(gem.envs.registration.spec(env_id), GAME_MAXIMA[env_id])
    try:
        env = gem.make(env_id, **kwargs)
        env.reset(seed=0)
    except ValueError:
        pass


# ---------------------------------------------------------------- one source: the env's PARAMS
from gem.params import Param, client_params, declared_params  # noqa: E402
from gem.server.schema import kwargs_json_schema  # noqa: E402
from gem.errors import ResourceUnavailable  # noqa: E402


def test_every_ids_server_schema_is_derived_from_its_envs_declaration():
    """No second table: for every registered id the server checks exactly what the env class declares."""
    assert len(builtin_specs()) > 200  # every family is registered, the rg: namespace included
    for spec in installed_specs():
        declared = declared_params(spec.load())
        assert declared is not None, f"{spec.id}: its env class declares no PARAMS"
        assert declared_schema(spec) == client_params(declared), spec.id
        properties = kwargs_json_schema(spec)["properties"]
        assert set(properties) == {p.name for p in declared if p.client is not False} | {"seed"}, spec.id


def bound_cases(spec):
    """(param, value, constructor accepts, server accepts) at and just past each bound ``spec``'s
    class declares."""
    for p in declared_params(spec.load()):
        view = p.for_client()
        numeric = p.type in (int, float, tuple)
        step = 1 if p.type in (int, tuple) else 0.001
        wrap = (lambda v, p=p: [v] * p.length[0] if p.type is tuple else v)
        if p.min is not None and numeric:
            yield p, wrap(p.min), not p.min_exclusive, view is not None and view.accepts(wrap(p.min))
            yield p, wrap(p.min - step), False, False
        if p.max is not None and numeric:
            yield p, wrap(p.max), True, view is not None and view.max in (None, p.max)
            yield p, wrap(p.max + step), False, False
        if view is not None and view.max is not None and p.max != view.max and numeric:
            yield p, wrap(view.max), True, True  # the narrower client bound, declared
            yield p, wrap(view.max + step), True, False
        bad = 1 if p.type is str else "x"
        yield p, bad, False, False
        yield p, None, p.nullable, view is not None and view.nullable
        if p.choices is not None:
            yield p, p.choices[0], True, view is not None and p.choices[0] in (view.choices or ())


def _constructor_refuses(spec, param: Param, value) -> bool:
    """Whether building ``spec`` with ``param=value`` fails with the declared bounds' ValueError
    (a ValueError about another param's limit, such as Hanoi's turns for its disks, is not a refusal
    of this value's bounds)."""
    kwargs = {**spec.kwargs, param.name: value}
    try:
        env = spec.load()(**kwargs)
    except ValueError as exc:
        return str(exc).startswith(f"{param.name} must be")
    except ResourceUnavailable:  # the params passed (they are checked first); a hub dataset is out of reach
        return False
    env.close()
    return False


def _server_refuses(spec, param: Param, value) -> bool:
    """Whether the server refuses ``param=value`` with the declaration's message."""
    refusal = f"{param.name} must be" if param.for_client() is not None else f"may not set {param.name!r}"
    try:
        check_kwargs(spec, {param.name: value})
    except KwargsError as exc:
        return refusal in str(exc)
    return False


@pytest.mark.parametrize("entry_point", builtin_entry_points())
def test_constructor_and_server_agree_with_the_declaration_at_every_bound(entry_point):
    """Past each declared bound both the constructor and the server refuse the value. At each bound the
    constructor builds the env; the server accepts it unless the param declares a narrower range for
    clients (then it refuses it and accepts that range's bound instead). Every case of the class is
    checked and every disagreement listed."""
    spec = spec_of(entry_point)
    cases = list(bound_cases(spec))
    assert cases or not declared_params(spec.load()), entry_point
    wrong = []
    for param, value, constructor_ok, server_ok in cases:
        case = f"{param.name}={value!r}"
        if not constructor_ok:
            if server_ok:
                wrong.append(f"{case}: the server would accept what the constructor refuses")
            if not _server_refuses(spec, param, value):
                wrong.append(f"{case}: the server does not refuse it")
            if not _constructor_refuses(spec, param, value):
                wrong.append(f"{case}: the constructor does not refuse it")
            continue
        if _constructor_refuses(spec, param, value):
            wrong.append(f"{case}: the constructor refuses it")
        if server_ok:
            try:
                accepted = check_kwargs(spec, {param.name: value})
            except KwargsError as exc:
                wrong.append(f"{case}: the server refuses it ({exc})")
            else:
                if accepted != {param.name: param.check(value)}:
                    wrong.append(f"{case}: the server accepts it as {accepted}")
        elif param.for_client() is not None and not _server_refuses(spec, param, value):
            wrong.append(f"{case}: the server does not refuse it (a narrower client range)")
    assert wrong == [], f"{spec.id}: " + "; ".join(wrong)


def test_the_server_publishes_each_ids_kwargs_schema(request):
    needs_extra("server")
    import httpx

    server = request.getfixturevalue("serve")(env_ids=["game:TowerofHanoi-v0-easy"])
    r = httpx.get(server.url + "/envs/game:TowerofHanoi-v0-easy/kwargs")
    assert r.status_code == 200
    body = r.json()
    assert body["env_id"] == "game:TowerofHanoi-v0-easy" and body["kwargs"]["additionalProperties"] is False
    disks = body["kwargs"]["properties"]["num_disks"]
    assert disks["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 12}
    assert body["kwargs"]["properties"]["max_turns"]["anyOf"][0]["maximum"] == 10_000  # the client's cap
    assert set(body["kwargs"]["properties"]) == {"num_disks", "max_turns", "seed"}
    assert httpx.get(server.url + "/envs/game:Wordle-v0-easy/kwargs").status_code == 404  # not served here


def test_the_published_json_schema_agrees_with_the_server_on_every_bound():
    """A client validating against GET /envs/{id}/kwargs gets the server's verdict, value for value."""
    jsonschema = pytest.importorskip("jsonschema")
    specs = [installed_spec(ep) for ep in builtin_entry_points()]
    assert specs.count(None) < len(specs)
    for spec, param, value, _, _ in [(s, *case) for s in specs if s is not None for case in bound_cases(s)]:
        validator = jsonschema.Draft202012Validator(kwargs_json_schema(spec))
        try:
            check_kwargs(spec, {param.name: value})
            accepted = True
        except KwargsError:
            accepted = False
        assert validator.is_valid({param.name: value}) == accepted, (spec.id, param.name, value)
