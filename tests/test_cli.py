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
