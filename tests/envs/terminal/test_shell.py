"""The persistent sandboxed shell (gem.tools.bash_tool): state, limits, archives, the BashTool."""

import json

import pytest

from gem.envs.terminal.task import build_tar, read_tar
from gem.tools.bash_tool import BashTool, SandboxShell, find_bash_command, parse_function_call


@pytest.fixture
def shell():
    sh = SandboxShell(command_timeout=5, max_output=2000)
    sh.start(build_tar({"data/a.txt": "alpha\n", "run.sh": ("#!/bin/bash\necho ran\n", 0o755)}))
    yield sh
    sh.close()


def test_cwd_variables_functions_and_aliases_persist(shell):
    assert shell.run("cd data && export GREETING='hi there' && N=5 && f(){ echo fn-$1; } && alias L='echo aliased'").exit_code == 0
    out = shell.run("pwd | sed 's|.*/||'; echo \"$GREETING $N\"; f 7; L; env | grep -c GREETING").output
    assert out.split("\n")[:5] == ["data", "hi there 5", "fn-7", "aliased", "1"]


def test_exit_status_and_state_survive_exit(shell):
    result = shell.run("cd data; X=1; exit 3")
    assert result.exit_code == 3
    assert shell.run("echo $X; ls").output == "1\na.txt\n"


def test_files_and_modes_from_the_archive(shell):
    assert shell.run("./run.sh && cat data/a.txt").output == "ran\nalpha\n"


def test_timeout_kills_the_command_and_the_shell_goes_on(shell):
    result = shell.run("echo start; sleep 30", timeout=1)
    assert result.timed_out and result.exit_code < 0 and "start" in result.output
    assert "timed out" in result.render()
    assert shell.run("echo alive").output == "alive\n"


def test_background_processes_do_not_outlive_the_command(shell):
    assert shell.run("sleep 60 & echo $! > pid").exit_code == 0
    assert shell.run("kill -0 $(cat pid) 2>/dev/null && echo running || echo gone").output == "gone\n"


def test_flood_is_cut_with_a_marker(shell):
    result = shell.run("yes abcdefgh | head -c 1000000")
    assert result.truncated and "bytes of output truncated" in result.output
    assert len(result.output) < 3000


def test_fork_bomb_is_contained(shell):
    result = shell.run(":(){ :|:& };:", timeout=3)
    assert result.seconds < 10  # the process limit stops it; what is left is killed after it
    assert shell.run("echo still here").output == "still here\n"
    # alive afterwards (killed ones may linger as zombies until reaped): the session and this pipeline
    assert int(shell.run("ps -u $(id -u) -o stat= | grep -vc '^Z'").output) <= 5


def test_unrunnable_and_hostile_commands_never_raise(shell):
    assert shell.run("echo a\x00b").exit_code == 126
    assert shell.run("echo \ud800 ok").output.endswith("ok\n")
    assert "refused" in shell.run("x" * 200_001).output
    assert shell.run("if then fi").exit_code == 2


def test_export_and_load_roundtrip(shell):
    shell.run("echo new > data/b.txt && chmod 600 data/b.txt && ln -s a.txt data/link")
    files = read_tar(shell.export())
    assert files["data/b.txt"] == b"new\n" and files["run.sh"].startswith(b"#!/bin/bash")
    shell.run("rm -rf data run.sh")
    shell.load(shell.export())  # an empty workspace
    assert shell.run("ls").output == ""


def test_state_snapshot_restores_files_and_shell(shell):
    shell.run("cd data && export K=v && echo x > new.txt")
    state = shell.get_state()
    shell.run("cd .. && rm -rf data && unset K")
    shell.set_state(state)
    assert shell.run("pwd | sed 's|.*/||'; echo $K; cat new.txt").output == "data\nv\nx\n"


def test_parsing_helpers():
    assert find_bash_command("x <bash>ls</bash> y").command == "ls"
    assert find_bash_command("```bash\necho 1\n```").command == "echo 1"
    assert find_bash_command("no command") is None
    assert parse_function_call('{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}') == ("bash", {"command": "ls"})
    assert parse_function_call('[{"function": {"name": "submit", "arguments": {}}}]') == ("submit", {})
    assert parse_function_call("{not json") is None


def test_bash_tool_protocol():
    tool = BashTool(timeout=5, files=build_tar({"f.txt": "1\n2\n"}))
    try:
        assert "<bash>" in tool.instruction_string()
        assert tool.tool_schema()["function"]["name"] == "bash"
        parsed, error, obs, cut = tool.execute_action("count: <bash>wc -l < f.txt</bash> trailing")
        assert parsed and not error and obs.startswith("2\n[exit code 0]") and cut.endswith("</bash>")
        parsed, error, obs, _ = tool.execute_action(json.dumps({"name": "bash", "arguments": {"command": "false"}}))
        assert parsed and error and "[exit code 1]" in obs
        assert tool.execute_action("just text")[0] is False
        tool.execute_action("<bash>echo x > g.txt</bash>")
        tool.reset()  # a fresh workspace for the next episode
        assert "No such file" in tool.execute_action("<bash>cat g.txt</bash>")[2]
    finally:
        tool.close()


def test_bash_tool_gives_any_env_a_shell():
    from gem.tools.tool_env_wrapper import ToolEnvWrapper

    import gem

    env = ToolEnvWrapper(gem.make("code:Bundled"), tools=[BashTool])
    try:
        obs, _ = env.reset(seed=0)
        assert "<bash>" in obs
        obs, reward, terminated, truncated, info = env.step("<bash>echo $((6*7))</bash>")
        assert obs.startswith("42\n[exit code 0]") and info["use_tool"] and info["tool_type"] == "bash"
    finally:
        env.close()


def test_tools_report_a_broken_sandbox_instead_of_raising():
    from gem.tools.editor_tool import EditorTool
    from gem.sandbox import Sandbox

    box = Sandbox()
    box.close()
    tool = BashTool(sandbox=box)
    parsed, error, obs, _ = tool.execute_action("<bash>ls</bash>")
    assert parsed and error and "not available" in obs
    parsed, error, obs, _ = EditorTool(SandboxShell(sandbox=box)).execute_action('<view path="."/>')
    assert parsed and error and "not available" in obs


def test_load_replaces_read_only_trees(shell):
    shell.run("mkdir -p ro/sub && echo x > ro/sub/f && chmod 500 ro/sub ro")
    snapshot = shell.export()
    shell.load(build_tar({"other.txt": "o\n"}))
    assert shell.run("ls -A").output == "other.txt\n"
    shell.load(snapshot)
    assert shell.run("cat ro/sub/f && stat -c %a ro ro/sub").output == "x\n500\n500\n"
