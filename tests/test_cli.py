import json
import os
import subprocess
import sys

import pytest

from gem.cli import main


def test_run_solver_json(capsys):
    assert main(["run", "game:GuessTheNumber-v0-hard", "--agent", "solver", "--episodes", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {"env_id", "episodes", "mean_reward", "success_rate", "mean_turns", "pass@1"} <= set(summary)
    assert summary["episodes"] == 20 and summary["success_rate"] == 1.0 and summary["mean_reward"] == 1.0
    assert 1 <= summary["mean_turns"] <= 6


def test_run_random_is_seeded(capsys):
    args = ["run", "game:GuessTheNumber-v0-easy", "--episodes", "10", "--seed", "3", "--json"]
    def scores() -> dict:
        main(args)
        summary = json.loads(capsys.readouterr().out)
        summary.pop("mean_seconds")  # the only field that is not a function of the seed
        return summary

    assert scores() == scores()


def test_list_family_and_unknown_family(capsys):
    assert main(["list", "game"]) == 0
    assert "game:GuessTheNumber-v0-easy" in capsys.readouterr().out
    assert main(["list", "nope"]) == 2
    assert "choose one of" in capsys.readouterr().err


def test_unknown_id_exit_code(capsys):
    assert main(["run", "game:Nope-v0"]) == 2
    assert "Unknown env id" in capsys.readouterr().err


def test_play_reads_moves_from_stdin():
    moves = "\n".join(f"\\boxed{{{g}}}" for g in range(1, 11)) + "\n"
    proc = subprocess.run(
        [sys.executable, "-m", "gem.cli", "play", "game:GuessTheNumber-v0-easy", "--seed", "2",
         "--kwarg", "max_turns=10"],
        input=moves, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Congratulations" in proc.stdout and "total reward +1" in proc.stdout


def test_gem_console_script_installed():
    # pip installs the script beside the interpreter (the venv's bin/): it must be there.
    script = os.path.join(os.path.dirname(sys.executable), "gem")
    assert os.path.exists(script), f"the gem console script is missing from {os.path.dirname(sys.executable)}"
    proc = subprocess.run([script, "list", "--markdown"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| `game:GuessTheNumber-v0` |" in proc.stdout


def test_list_into_a_closed_pipe_ends_quietly():
    # `gem list | head -1`: the reader goes away before gem writes; no traceback.
    proc = subprocess.Popen([sys.executable, "-m", "gem.cli", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()


def test_run_refuses_an_agent_that_cannot_play_before_any_work(capsys):
    assert main(["run", "math:Arithmetic", "--agent", "solver", "--episodes", "3"]) == 2
    captured = capsys.readouterr()
    assert "math:Arithmetic has no solver" in captured.err and "Agents that can: openai, random, gold" in captured.err
    assert "0/3" not in captured.err and captured.out == ""  # no progress bar was started
    assert main(["run", "multi:KuhnPoker-v0", "--quiet"]) == 2
    assert "multi:KuhnPoker-v0-vs-random" in capsys.readouterr().err
    assert main(["run", "math:Arithmetic", "--agent", "openai"]) == 2
    assert "--model" in capsys.readouterr().err


def test_play_takes_moves_typed_without_the_format():
    moves = "5\n3\n  2 \n1\n"
    proc = subprocess.run(
        [sys.executable, "-m", "gem.cli", "play", "game:GuessTheNumber-v0-easy", "--seed", "2", "-v"],
        input=moves, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "(taken as \\boxed{5})" in proc.stdout and "(taken as \\boxed{2})" in proc.stdout
    assert "Episode over" in proc.stdout and "Enter your next guess." in proc.stdout


def test_verbose_flag_before_or_after_the_subcommand(capsys):
    for args in (["-v", "run", "game:GuessTheNumber-v0-easy", "--episodes", "1", "--json"],
                 ["run", "game:GuessTheNumber-v0-easy", "--episodes", "1", "--json", "-v"]):
        assert main(args) == 0
        assert json.loads(capsys.readouterr().out)["episodes"] == 1


def test_subcommand_help_shows_defaults(capsys):
    for sub, default in (("run", "(default: random)"), ("eval", "(default: 10)")):
        with pytest.raises(SystemExit):
            main([sub, "--help"])
        assert default in " ".join(capsys.readouterr().out.split())


def _play(env_id: str, lines: list[str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gem.cli", "play", env_id, "--seed", "0", *extra],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120,
    )


def test_play_wraps_a_bare_command_in_a_terminal_task():
    proc = _play("terminal:CountLines", ["wc -l < data.txt > count.txt", "<done/>"])
    assert proc.returncode == 0, proc.stderr
    assert "(taken as <bash>wc -l < data.txt > count.txt</bash>)" in proc.stdout
    assert "Tests passed: 1/1" in proc.stdout and "total reward +1" in proc.stdout


def test_play_wraps_a_bare_command_in_a_swe_task():
    proc = _play("swe:Slugify", ["ls", ":quit"])
    assert proc.returncode == 0, proc.stderr
    assert "(taken as <bash>ls</bash>)" in proc.stdout and "[exit code 0]" in proc.stdout
    assert "format" not in proc.stdout.split("(taken as <bash>ls</bash>)")[1].split(">")[0].lower()
    assert "Quit; total reward" in proc.stdout


def test_play_help_and_quit_are_never_sent_as_moves():
    proc = _play("game:GuessTheNumber-v0-easy", ["help", ":help", "5", ":quit"], "--kwarg", "max_turns=10")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "(not sent: type :help for help, :quit to stop, or \\boxed{help} to send it as a move)" in out
    assert ":help  show this help" in out and "MOVE becomes \\boxed{MOVE}" in out
    assert out.count("[reward ") == 1  # only "5" reached the env: help and :help did not end the game
    assert "(taken as \\boxed{5})" in out and "Quit; total reward" in out


# ---------------------------------------------------------------- misspelt flags and subcommands
@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (["run", "game:GuessTheNumber-v0", "--episods", "3"], "usage: gem run", "did you mean --episodes?"),
        (["run", "game:GuessTheNumber-v0", "--max-trns=3"], "usage: gem run", "did you mean --max-turns?"),
        (["list", "game", "--markdwn"], "usage: gem list", "did you mean --markdown?"),
        (["rn", "game:GuessTheNumber-v0"], "usage: gem ", "did you mean run?"),
    ],
)
def test_a_misspelt_flag_or_subcommand_gets_did_you_mean(capsys, argv, usage, hint):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and usage in err, err


def test_an_unknown_flag_with_nothing_close_names_it_without_a_guess(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "game:GuessTheNumber-v0", "--zzzzzz"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err and "usage: gem run" in err


# ---------------------------------------------------------------- gem list: counts and extras
def _listing(family) -> str:
    import io

    import gem

    buf = io.StringIO()
    gem.print_envs(family, file=buf)
    return buf.getvalue()


def test_list_counts_in_the_singular_and_the_plural(monkeypatch):
    from gem.envs.registration import EnvSpec, registry

    guess = "gem.envs.game_env.guess_the_number:GuessTheNumberEnv"
    monkeypatch.setitem(registry, "solo:Only-v0", EnvSpec("solo:Only-v0", guess, description="one"))
    assert _listing("solo").rstrip().endswith("\n1 environment.")
    assert "solo (1)" in _listing("solo")
    monkeypatch.setitem(registry, "solo:Other-v0", EnvSpec("solo:Other-v0", guess, description="two"))
    assert _listing("solo").rstrip().endswith("\n2 environments.")


def test_list_marks_each_id_whose_extra_is_missing(monkeypatch):
    from gem.envs import registration

    # the word games' modules made unfindable: the real find_spec check says the extra is missing
    monkeypatch.setitem(registration.EXTRA_MODULES, "games", ("gem_no_such_module_for_the_test",))
    registration.extra_installed.cache_clear()
    try:
        out = _listing("game")
    finally:
        registration.extra_installed.cache_clear()
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  game:")}
    assert lines["game:Wordle-v0-easy"].endswith("[needs games]")
    assert lines["game:Hangman-v0-hard"].endswith("[needs games]")
    assert "[needs" not in lines["game:GuessTheNumber-v0"]  # the core plays it
    # one note names the mark and says how to install the extra
    assert '[needs games]: the \'games\' extra is not installed: pip install -e ".[games]" in the GEM checkout' in out


def test_list_says_once_when_a_whole_family_needs_a_missing_extra(monkeypatch):
    from gem.envs import registration

    monkeypatch.setattr(registration, "extra_installed", lambda extra: extra != "search")
    out = _listing("webshop")
    assert '(needs the \'search\' extra: pip install -e ".[search]" in the GEM checkout)' in out
    assert "[needs search]" not in out  # every id needs it: one line, not a mark on each
    assert out.count("needs the 'search' extra") == 1
    monkeypatch.setattr(registration, "extra_installed", lambda extra: True)
    assert "needs" not in _listing("webshop")


def test_every_extra_a_spec_names_is_checked_against_pyproject():
    """Each id's extra is in EXTRA_MODULES (so gem list can mark it), and each module listed there is a
    distribution of that extra in pyproject.toml (import name = distribution name, - for _)."""
    import re
    from pathlib import Path

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    from gem.envs.registration import EXTRA_MODULES, registry

    named = {s.extra for s in registry.values() if s.extra}
    assert named <= set(EXTRA_MODULES), named - set(EXTRA_MODULES)
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    for extra, modules in EXTRA_MODULES.items():
        dists = {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower() for req in extras[extra]}
        for module in modules:
            assert module.replace("_", "-") in dists, f"{module} is not a package of the {extra!r} extra"


# ---------------------------------------------------------------- gem play: a non-move
def test_play_refuses_a_non_move_and_lets_the_player_type_again():
    proc = _play("game:GuessTheNumber-v0-easy", ["hello", "5", ":quit"])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "(not sent: 'hello' is not a move here. As \\boxed{hello} it would be a format error" in out
    assert "you did not provide a valid guess" in out  # what the env would have answered
    assert out.count("[reward ") == 1 and "(taken as \\boxed{5})" in out  # only 5 reached the env
    assert "Episode over" not in out and "Quit; total reward +0." in out  # the game went on


def test_play_sends_a_move_typed_in_the_format_as_it_is():
    # The player wrote the format: that is their move, even if it is a format error.
    proc = _play("game:GuessTheNumber-v0-easy", ["\\boxed{hello}"])
    assert proc.returncode == 0, proc.stderr
    assert "not sent" not in proc.stdout
    assert "Episode over (terminated); total reward -0.1." in proc.stdout


def test_human_agent_asks_again_only_when_the_check_objects():
    from gem.agents.simple import HumanAgent, format_error_check
    import gem

    env = gem.make("game:GuessTheNumber-v0-easy")
    observation, info = env.reset(seed=0)
    typed = iter(["hello", "world", "7"])
    said = []
    agent = HumanAgent(read=lambda prompt: next(typed), tell=said.append, check=format_error_check(env))
    agent.reset(observation, info)
    assert agent.act(observation, info) == "\\boxed{7}"
    assert sum("not sent: 'hello'" in s for s in said) == 1 and sum("not sent: 'world'" in s for s in said) == 1
    assert env.turn_count == 0  # the checks stepped copies, never the env
    # an env whose format error pays what a step pays cannot tell one from the other: no check
    env.set_reward_levels(format_error_reward=0.0)
    assert format_error_check(env) is None


def test_gem_list_builds_only_what_it_runs():
    # `gem list` names every subcommand but builds none of the others: no agents, no numpy, no asyncio
    code = (
        "import sys, gem.cli\n"
        "code = gem.cli.main(['list', 'game'])\n"
        "heavy = ('numpy', 'asyncio', 'gem.agents', 'gem.rl', 'gem.server', 'gem.eval', 'gem.checks')\n"
        "print(code, [m for m in heavy if m in sys.modules], file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "0 []"
    assert "game:GuessTheNumber-v0" in proc.stdout


def test_every_subcommand_still_parses_and_shows_in_help(capsys):
    from gem.cli import SUBCOMMANDS, build_parser, command_in

    assert command_in(["-v", "list", "game"]) == "list" and command_in(["serve"]) == "serve"
    assert command_in(["rn"]) is None and command_in(["--help"]) is None and command_in([]) is None
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("list", "play", "run", *SUBCOMMANDS))
    for name in SUBCOMMANDS:  # built alone, each subcommand has its own options
        with pytest.raises(SystemExit) as exc:
            build_parser(name).parse_args([name, "--help"])
        assert exc.value.code == 0 and f"usage: gem {name}" in capsys.readouterr().out
