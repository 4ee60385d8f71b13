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


def builtin_specs():
    for env_id in gem.list_envs():  # ids served lazily (rg:) too
        try:
            gem.envs.registration.spec(env_id)
        except Exception:  # noqa: BLE001 - an optional dependency missing: its id is not served here
            pass
    return [s for s in registry.values() if isinstance(s.entry_point, str) and s.entry_point.startswith("gem.")]


def test_every_builtin_entry_point_declares_a_schema():
    missing = sorted({s.entry_point for s in builtin_specs()} - set(SCHEMAS))
    assert missing == []


@pytest.mark.parametrize("entry_point", sorted(SCHEMAS))
def test_schema_names_and_types_match_the_constructor(entry_point):
    """Each declared kwarg is a constructor parameter, and the constructor's default passes."""
    spec = next((s for s in builtin_specs() if s.entry_point == entry_point), None)
    assert spec is not None, f"{entry_point} is declared but no built-in id uses it"
    params = inspect.signature(spec.load()).parameters
    for name, param in SCHEMAS[entry_point].items():
        assert name in params, f"{entry_point} has no parameter {name!r}"
        default = params[name].default
        if default is not inspect.Parameter.empty:
            param.check(name, default, spec.id)


def test_every_registered_default_passes_its_schema():
    """A client may send back exactly what an id's spec holds (the presets' own kwargs)."""
    for spec in builtin_specs():
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
    "game:Minesweeper-v0-easy": {"rows": 30, "cols": 30, "num_mines": 800},
    "game:Sokoban-v0-easy": {"dim_room": [10, 10], "num_boxes": 4},
    "game:Sudoku-v0-easy": {"scale": 9, "clues": 1, "max_turns": 10_000},
    "game:FifteenPuzzle-v0-easy": {"num_rows": 5, "max_turns": 10_000},
    "game:TowerofHanoi-v0-easy": {"num_disks": 10, "max_turns": 10_000},
    "game:Game2048-v0-easy": {"board_size": 8, "target_tile": 2**17},
    "game:Crosswords-v0-easy": {"num_words": 10},
    "game:WordSearch-v0-easy": {"num_words": 20},
    "game:Wordle-v0-easy": {"word_length": 15},
    "game:Hangman-v0-easy": {"word_length": 15},
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
