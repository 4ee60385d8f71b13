"""gem.params: one declaration per env gives the constructor checks, the hints, the docs and the
server's schema."""

from __future__ import annotations

from pathlib import Path

import pytest

import gem
from gem.params import Param, check_params, client_params, declared_params, json_schema, params_table

REPO = Path(__file__).resolve().parents[1]


def test_a_param_checks_type_bounds_and_none():
    disks = Param("num_disks", int, "disks", min=1, max=12, nullable=True)
    assert disks.check(12) == 12 and disks.check(None) is None
    for bad in (0, 13, 3.0, True, "3"):
        with pytest.raises(ValueError, match=r"num_disks must be an int from 1 to 12 \(or None\), got "):
            disks.check(bad)
    with pytest.raises(ValueError, match=r"num_disks must be an integer from 1 to 12 \(or null\), got 13"):
        disks.check(13, json=True)
    seconds = Param("timeout", float, min=0, min_exclusive=True)
    assert seconds.check(2) == 2.0 and isinstance(seconds.check(2), float)
    with pytest.raises(ValueError, match="timeout must be a number above 0, got 0"):
        seconds.check(0)
    mode = Param("reward", str, choices=("em", "f1"))
    with pytest.raises(ValueError, match="reward must be one of em, f1, got 'x'"):
        mode.check("x")
    with pytest.raises(ValueError, match="must be true or false"):
        Param("flag", bool).check(1, json=True)


def test_a_tuple_param_takes_a_list_of_ints_and_a_bare_int_where_one_item_is_allowed():
    hops = Param("hops", tuple, min=1, max=3, length=(1, 3))
    assert hops.check([1, 3]) == (1, 3) and hops.check(2) == (2,)
    for bad in ([], [1, 2, 3, 1], [4], ["1"], [True]):
        with pytest.raises(ValueError, match=r"hops must be a list of 1 to 3 ints from 1 to 3 \(or one int\)"):
            hops.check(bad)
    room = Param("dim_room", tuple, min=4, max=10, length=(2, 2))
    with pytest.raises(ValueError, match="a list of 2 ints from 4 to 10, got 6"):
        room.check(6)


def test_a_declaration_is_checked_when_it_is_written():
    with pytest.raises(TypeError, match="type must be one of"):
        Param("x", list)
    with pytest.raises(TypeError, match="needs length"):
        Param("x", tuple)
    with pytest.raises(TypeError, match="client may narrow"):
        Param("x", int, client={"maximum": 3})

    class Broken:
        PARAMS = ("max_turns",)

    with pytest.raises(TypeError, match="not a Param"):
        declared_params(Broken)


def test_the_client_view_narrows_and_can_be_refused():
    turns = Param("max_turns", int, min=1, client={"max": 100})
    assert turns.for_client() == Param("max_turns", int, min=1, max=100)
    assert Param("data", str, client=False).for_client() is None
    timeout = Param("t", float, min=0, min_exclusive=True, client={"min": 0.1, "max": 5})
    assert timeout.for_client().accepts(0.1) and not timeout.accepts(0)  # a client's own min is inclusive
    params = (turns, Param("data", str, client=False))
    assert list(client_params(params)) == ["max_turns"]
    schema = json_schema(client_params(params).values())
    assert schema == {
        "type": "object",
        "properties": {"max_turns": {"type": "integer", "minimum": 1, "maximum": 100}},
        "additionalProperties": False,
    }
    nullable = Param("n", int, "how many", min=1, nullable=True).json_schema()
    assert nullable == {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "description": "how many"}


def test_check_params_uses_the_nearest_declaration_in_the_mro():
    class Base(gem.Env):
        PARAMS = (Param("size", int, min=1, max=5), Param("mode", str, choices=("a", "b")))

        def __init__(self, size: int = 3, mode: str = "a") -> None:
            check_params(self, locals())
            super().__init__()
            self.size = size

        def reset(self, seed=None, **kwargs):
            return "", {}

        def step(self, action):
            return "", 0.0, True, False, {}

    class Wider(Base):
        PARAMS = (Param("size", int, min=1, max=50),)  # redeclares size; mode stays Base's

        def __init__(self, size: int = 3, mode: str = "a") -> None:
            super().__init__(size, mode)

    assert Wider(size=40).size == 40
    with pytest.raises(ValueError, match="size must be an int from 1 to 5"):
        Base(size=40)
    with pytest.raises(ValueError, match="mode must be one of a, b"):
        Wider(mode="c")


def test_make_hints_name_what_the_suggested_param_takes():
    with pytest.raises(ValueError, match=r"'num_disk' \(did you mean 'num_disks'\?\); it accepts: num_disks, "
                                         r"max_turns\. num_disks takes an int from 1 to 12 \(or None\)\."):
        gem.make("game:TowerofHanoi-v0-easy", num_disk=4)
    with pytest.raises(ValueError, match=r"num_disks must be an int from 1 to 12 \(or None\), got 13"):
        gem.make("game:TowerofHanoi-v0-easy", num_disks=13)


def test_params_table_lists_defaults_bounds_and_what_a_client_may_set():
    class Game:
        PARAMS = (
            Param("size", int, "board side", min=2, max=9),
            Param("max_turns", int, "turns | limit", min=1, client={"max": 100}),
            Param("data", str, "a file", client=False),
        )

        def __init__(self, size: int = 4, max_turns: int = 10, data: str = "x.json") -> None:
            pass

    assert params_table({"Game": Game}) == (
        "### Game\n\n| name | default | allowed | a client may set | what it does |\n|---|---|---|---|---|\n"
        "| size | 4 | an int from 2 to 9 | yes | board side |\n"
        "| max_turns | 10 | an int of at least 1 | an int from 1 to 100 | turns \\| limit |\n"
        "| data | 'x.json' | a string | no | a file |\n"
    )


def test_the_env_params_page_is_generated_from_the_declarations():
    """docs/env-params.md is `gem list --params`: regenerate it when a declaration changes."""
    from gem.cli import markdown_params_page
    from gem.envs.registration import _family_notes

    missing = [family for family, note in _family_notes.items() if note()]
    if missing:
        pytest.skip(f"the libraries of {', '.join(missing)} are not installed, so their classes are not listed")
    assert (REPO / "docs" / "env-params.md").read_text() == markdown_params_page()


def test_gem_list_params_prints_a_familys_declarations(capsys):
    from gem.cli import main

    assert main(["list", "game", "--params"]) == 0
    out = capsys.readouterr().out
    assert "### TowerofHanoiEnv (`game:TowerofHanoi-v0-easy`" in out
    assert "| num_disks | 3 | an int from 1 to 12 (or None) | yes |" in out
    assert "| max_turns | 20 | an int of at least 1 (or None) | an int from 1 to 10000 (or None) |" in out
    assert "MathEnv" not in out  # only the family asked for
    assert main(["list", "nope", "--params"]) == 2
    assert "choose one of" in capsys.readouterr().err
