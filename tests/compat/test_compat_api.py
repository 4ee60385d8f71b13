"""Code written for the original GEM (gem-llm 0.1.0 and its main branch) runs here unchanged.

Each test is a reproducer of one thing the original's users write: its kwargs, stepping on after the
end of an episode, one tool instance in ``partial(ToolEnvWrapper, tools=[tool])``, its sample MCP
server and MCPTool API, its msgpack search servers, its public names, its README's examples, and an
env written the original way (its base class, its ``register`` call) through our vector envs,
wrappers, ``check_env`` and ``gem eval``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import os
import random
import re
import subprocess
import sys
import threading
import warnings
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator, Optional

import pytest

import gem
from gem.core import EPISODE_OVER_OBSERVATION, strict_step
from gem.errors import ResetNeeded, StepAfterEndWarning
from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.utils.env_checker import check_env
from gem.wrappers.wrapper_factory import WRAPPER_FACTORY
from tests.conftest import needs_env

pytestmark = pytest.mark.usefixtures("lenient_step")  # these tests pin the default (lenient) step-after-end

TIME_STDIO = {"command": sys.executable, "args": ["-m", "gem.tools.mcp_server.time_mcp", "--transport", "stdio"]}
TIME_TOOLS = {"current_time", "relative_time", "days_in_month", "get_timestamp", "convert_time", "get_week_year"}


# ------------------------------------------------------------------- an env written the original way
class OriginalStyleAddEnv(gem.Env):
    """Written as the original GEM's envs are: ``super().reset(seed)``, plain tuples from ``step``,
    no ``_check_step``/``_result``, any extra kwarg accepted (``**_``), the gold answer in ``answer``."""

    def __init__(self, max_value: int = 9, **_: Any):
        super().__init__()
        self.max_value = max_value
        self._gen = random.Random()

    def reset(self, seed: Optional[int] = None):
        super().reset(seed)
        if seed is not None:
            self._gen = random.Random(seed)
        self.a, self.b = self._gen.randint(1, self.max_value), self._gen.randint(1, self.max_value)
        self.answer = self.a + self.b
        return f"What is {self.a} + {self.b}? Put the answer in \\boxed{{}}.", {}

    def step(self, action: str):
        match = re.search(r"\\boxed\{(-?\d+)\}", action)
        if match is None:
            return "Write your answer as \\boxed{N}.", -0.1, True, False, {"correct": False}
        correct = int(match.group(1)) == self.answer
        return "Correct." if correct else "Wrong.", 1.0 if correct else 0.0, True, False, {"correct": correct}

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self._gen.randint(2, 2 * self.max_value)}}}"


ORIGINAL_ID = "compat:OriginalAdd-v0"


@pytest.fixture(scope="module", autouse=True)
def original_style_id() -> Iterator[str]:
    """Registered the original's way for this module's tests only (other tests list every id)."""
    gem.register(ORIGINAL_ID, "tests.compat.test_compat_api:OriginalStyleAddEnv", max_value=9)
    try:
        yield ORIGINAL_ID
    finally:
        gem.envs.registration.registry.pop(ORIGINAL_ID, None)


def _solve(env: gem.Env, obs: str) -> str:
    a, b = map(int, re.findall(r"\d+", obs)[:2])
    return f"\\boxed{{{a + b}}}"


# ------------------------------------------------------------------------------------ kwargs
def test_make_accepts_the_original_kwargs_and_still_catches_typos(caplog):
    with caplog.at_level(logging.WARNING, logger="gem.envs.registration"):
        env = gem.make("game:Sudoku-v0-easy", seed=1, use_mp=False)
        again = gem.make("game:Sudoku-v0-easy", use_mp=False)
    assert env.spec.kwargs == {"clues": 10, "max_turns": 15, "scale": 4} and again.spec.kwargs == env.spec.kwargs
    ignored = [r for r in caplog.records if "ignores use_mp" in r.getMessage()]
    assert len(ignored) == 1  # logged once per env class
    assert env.reset()[0] == gem.make("game:Sudoku-v0-easy", seed=1).reset()[0]  # the seed still seeds
    with pytest.raises(ValueError, match=r"'max_turn' \(did you mean 'max_turns'\?\); it accepts: clues, max_turns"):
        gem.make("game:Sudoku-v0-easy", max_turn=3)
    with pytest.raises(ValueError, match="'colour'"):
        gem.make("game:Sudoku-v0-easy", colour="red")  # no env of the original takes it


def test_make_vec_shares_kwargs_across_ids_as_the_original():
    vec = gem.make_vec(["game:Sudoku-v0-easy", "math:Arithmetic", ORIGINAL_ID], max_turns=9, use_mp=False, verbose=False)
    try:
        sudoku, math_env, original = vec.envs
        assert sudoku.max_turns == 9  # used by the game; the single-turn math env accepts and ignores it
        assert original.max_value == 9
        obs, infos = vec.reset(seed=0)
        assert len(obs) == 3
    finally:
        vec.close()


def test_unknown_id_is_a_value_error_as_in_the_original():
    with pytest.raises(ValueError, match="Unknown env id"):
        gem.make("game:NoSuchGame-v0")


# ------------------------------------------------------------------------- step after the end
GAME_IDS = sorted(i for i in gem.envs.registration.list_envs("game") if i.endswith("-easy"))


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_every_game_steps_on_after_the_end(env_id):
    needs_env(env_id)
    env = gem.make(env_id)
    env.reset(seed=0)
    solver = env.make_solver()
    obs, info = env.reset(seed=0)
    solver.reset(obs, info)
    for _ in range(500):
        obs, reward, terminated, truncated, info = env.step(solver.act(obs, info))
        if terminated or truncated:
            break
    assert terminated or truncated
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        after = [env.step(env.sample_random_action()) for _ in range(3)]
    assert [w.category for w in caught] == [StepAfterEndWarning]  # once
    for result in after:
        assert result[:4] == (EPISODE_OVER_OBSERVATION, 0.0, terminated, truncated)
    with strict_step(), pytest.raises(ResetNeeded, match="call env.reset()"):
        env.step(env.sample_random_action())
    assert env.reset(seed=1)[0]  # a reset opens a new episode


def test_an_original_style_loop_that_ignores_done_runs_on():
    env = ToolEnvWrapper(gem.make("game:GuessTheNumber-v0-easy"), tools=[_python_tool()])
    env.reset(seed=0)
    rewards = []
    with pytest.warns(StepAfterEndWarning, match=r"ToolEnvWrapper.step\(\) was called after the episode ended"):
        for _ in range(8):  # the episode has 4 turns; the original's debug loops step on (ignore_done=True)
            rewards.append(env.step("\\boxed{1}")[1])
    assert rewards[4:] == [0.0] * 4


def test_strict_mode_from_the_environment_variable():
    code = (
        "import gem\n"
        "env = gem.make('game:GuessTheNumber-v0-easy'); env.reset(seed=0)\n"
        "while not any(env.step('\\\\boxed{1}')[2:4]): pass\n"
        "try:\n    env.step('\\\\boxed{1}')\nexcept gem.errors.ResetNeeded:\n    print('raised')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "GEM_STRICT_STEP": "1"},
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "raised", out.stderr


# ------------------------------------------------------------------------ one shared tool instance
def _python_tool():
    from gem.tools.python_code_tool import PythonCodeTool

    return PythonCodeTool(timeout=5)


def test_one_tool_instance_in_partial_tool_env_wrapper_for_make_vec():
    tool = _python_tool()
    wrapper = partial(ToolEnvWrapper, tools=[tool], tool_reward=0.05, tool_success_reward=0.25, max_tool_uses=5)
    vec = gem.make_vec(["math:Arithmetic"] * 2, wrappers=[wrapper], async_mode=True)
    try:
        vec.reset(seed=0)
        assert vec.envs[0].tools[0] is tool and vec.envs[1].tools[0] is not tool
        obs, rewards, *_ = vec.step(["<python>print(6 * 7)</python>", "<python>print(2 ** 10)</python>"])
        assert "42" in obs[0] and "1024" in obs[1] and list(rewards) == pytest.approx([0.3, 0.3])
    finally:
        vec.close()


# ------------------------------------------------------------------------------ time_mcp
def test_time_mcp_as_the_original_tests_use_it():
    pytest.importorskip("mcp")
    from gem.tools.mcp_server.time_mcp import _moment_to_strftime, _parse_date, _parse_dt, app

    async def run(name: str, arguments: dict) -> str:
        tool = await app.get_tool(name)
        return (await tool.run(arguments)).content[0].text

    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", asyncio.run(run("current_time", {})))
    assert re.fullmatch(r"\d{1,2}:\d{2} (AM|PM)", asyncio.run(run("current_time", {"format": "h:mm A", "timezone": "UTC"})))
    assert asyncio.run(run("days_in_month", {"date": "2024-02-01"})) == "29"
    assert asyncio.run(run("days_in_month", {"date": "1900-02-01"})) == "28"
    assert int(asyncio.run(run("get_timestamp", {"time": "2023-01-01 12:30:45.123"}))) % 1000 == 123
    convert = {"sourceTimezone": "UTC", "targetTimezone": "Asia/Shanghai", "time": "2023-01-01 20:00:00"}
    assert asyncio.run(run("convert_time", convert)) == "2023-01-02 04:00:00"
    assert asyncio.run(run("get_week_year", {"date": "2023-01-01"})) == "week: 0, isoWeek: 52"
    assert asyncio.run(run("get_week_year", {"date": "2023-01-09"})) == "week: 2, isoWeek: 2"
    assert asyncio.run(run("relative_time", {"time": "2000-01-01 00:00:00"})).endswith("years ago")
    with pytest.raises(Exception, match="expected a time like"):
        asyncio.run(run("relative_time", {"time": "invalid-date"}))
    assert _moment_to_strftime("h:mm A") == "%-I:%M %p" and _moment_to_strftime("MM/DD/YYYY") == "%m/%d/%Y"
    assert _parse_dt("2023-01-01 12:30:45.123").microsecond == 123000
    assert (_parse_date("2023-01-01").year, _parse_date("2023-01-01").hour) == (2023, 0)


def test_time_mcp_through_mcp_tool_with_the_original_api(tmp_path):
    pytest.importorskip("mcp")
    from gem.tools.mcp_tool import MCPTool

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"time": TIME_STDIO}}))
    tool = MCPTool.from_config_file(config_path=str(path))
    try:
        assert {t["name"] for t in tool.get_available_tools()} == TIME_TOOLS
        assert tool._get_server_names() == ["time"] and not tool._is_multi_server()
        assert tool._get_server_description().startswith("local stdio server 'time' via command:")
        action = '<tool_call><tool_name>days_in_month</tool_name><arguments>{"date": "2023-04-01"}</arguments></tool_call>'
        assert tool.execute_action(action) == (True, False, "30", action)  # raw, as the original's main
    finally:
        tool.close()
    # the original's positional order: config, auth, headers, handlers, retries, delay, timeout, validate
    logs: list = []
    wrapped = MCPTool(TIME_STDIO, None, None, logs.append, None, None, 2, 0.1, 20.0, True, 1, wrap_observation=True)
    try:
        assert (wrapped.max_retries, wrapped.delay_between_retries, wrapped.execution_timeout) == (2, 0.1, 20.0)
        obs = wrapped.execute_action('<tool_call>{"name": "days_in_month", "arguments": {"date": "2023-02-01"}}</tool_call>')[2]
        assert obs == "\n<tool_response>\n28\n</tool_response>\n"  # 0.1.0's form, one keyword away
    finally:
        wrapped.close()


# -------------------------------------------------------------- an original-style msgpack search server
class _MosecStyleHandler(BaseHTTPRequestHandler):
    """Like the original GEM's mosec retrieval server: msgpack ``{"query", "topk", "return_scores"}``
    in, msgpack ``{"result": [{"document", "score"}, ...]}`` out, HTTP 400 for anything else."""

    docs = [{"id": "0", "contents": '"Harbor Town"\nHarbor Town sits on the Blue River.'},
            {"id": "1", "contents": '"Stone Ridge"\nStone Ridge quarries granite.'}]

    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        import msgspec

        class QueryRequest(msgspec.Struct):
            query: str
            topk: Optional[int] = None
            return_scores: bool = False

        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            request = msgspec.msgpack.decode(body, type=QueryRequest)
        except msgspec.DecodeError as exc:
            self._send(400, str(exc).encode(), "text/plain")
            return
        words = set(request.query.lower().split())
        ranked = sorted(self.docs, key=lambda d: -len(words & set(d["contents"].lower().replace(".", "").split())))
        hits = [{"document": d, "score": 1.0 if request.return_scores else None} for d in ranked[: request.topk or 3]]
        self._send(200, msgspec.msgpack.encode({"result": hits}), "application/msgpack")

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass


@pytest.fixture
def mosec_style_server() -> Iterator[str]:
    pytest.importorskip("msgspec")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MosecStyleHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/retrieve"
    finally:
        server.shutdown()
        server.server_close()


def test_search_tool_talks_to_an_original_msgpack_server(mosec_style_server):
    import requests

    from gem.tools.search_tool import SearchTool

    assert requests.post(mosec_style_server, json={"queries": ["x"]}, timeout=5).status_code == 400  # msgpack only
    tool = SearchTool(search_url=mosec_style_server, topk=1)
    parsed, error, obs, parsed_action = tool.execute_action("<think>hm</think><search>granite quarries</search> rest")
    assert (parsed, error, parsed_action) == (True, False, "<think>hm</think><search>granite quarries</search>")
    assert obs == "Doc 1(Title: Stone Ridge) Stone Ridge quarries granite.\n"  # raw, as the original's main
    wrapped = SearchTool(search_url=mosec_style_server, topk=1, wrap_observation=True)
    assert wrapped.execute_action("<search>Blue River</search>")[2] == (
        "\n\n<information>Doc 1(Title: Harbor Town) Harbor Town sits on the Blue River.\n</information>\n\n"
    )


# --------------------------------------------------------------------------------- small names
def test_tool_env_wrapper_step_takes_verbose(caplog):
    env = ToolEnvWrapper(gem.make("math:Arithmetic"), tools=[_python_tool()])
    env.reset(seed=0)
    with caplog.at_level(logging.INFO, logger="gem.tools.tool_env_wrapper"):
        obs, reward, terminated, truncated, info = env.step("<python>print(1 + 1)</python>", verbose=True)
    assert "2" in obs and info["use_tool"] and any("Tool python_code ran" in r.getMessage() for r in caplog.records)
    assert env.step("\\boxed{0}", verbose=False)[2] is True
    env.close()


def test_seeding_names():
    import numpy as np

    from gem.utils import seeding

    seeding.set_seed()  # the original's default: no seed
    generator, seed = seeding.np_random(7)
    assert isinstance(generator, seeding.RNG) and seeding.RandomNumberGenerator is np.random.Generator and seed == 7
    expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(7))).integers(0, 10**6, 5)
    assert list(generator.integers(0, 10**6, 5)) == list(expected)
    assert isinstance(seeding.np_random()[1], int)
    with pytest.raises(ValueError):
        seeding.np_random(-1)


def test_env_registry_lists_rg_ids_without_importing_reasoning_gym_at_import():
    pytest.importorskip("reasoning_gym")
    code = ("import sys, gem\nfrom gem.envs.registration import ENV_REGISTRY\nbefore = 'reasoning_gym' in sys.modules\n"
            "print(before, 'rg:letter_counting' in ENV_REGISTRY, sum(k.startswith('rg:') for k in ENV_REGISTRY) > 50)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr
    from gem.envs.registration import ENV_REGISTRY

    assert ENV_REGISTRY["rg:letter_counting"].entry_point == "gem.envs.reasoning_gym:ReasoningGymEnv"


def test_public_names_of_the_original():
    from gem.__about__ import __version__
    from gem.tools.mcp_tool import is_timeout_error
    from gem.utils.constants import BASE_IMPORTS
    from gem.vector.async_vector_env import step_reset_env
    from gem.vector.vector_env import AutoresetMode
    from gem.wrappers.observation_wrapper import maybe_add_new_line

    assert __version__ == gem.__version__
    assert is_timeout_error(TimeoutError()) and not is_timeout_error(KeyError("x"))
    namespace: dict = {}
    exec(BASE_IMPORTS, namespace)  # noqa: S102 -- the header is meant to run in front of code
    assert all(name in namespace for name in ("deque", "defaultdict", "Counter", "math", "List", "lru_cache", "heappush"))
    assert maybe_add_new_line("a") == "a\n" and maybe_add_new_line("a\n") == "a\n" and maybe_add_new_line("") == ""
    env = gem.make(ORIGINAL_ID)
    obs, _ = env.reset(seed=3)
    obs2, reward, terminated, truncated, info = step_reset_env(_solve(env, obs), env, AutoresetMode.SAME_STEP, False)
    assert reward == 1.0 and terminated and obs2.startswith("What is")  # reset in the same step, no final_obs
    obs3, reward, terminated, truncated, _ = step_reset_env("ignored", env, AutoresetMode.NEXT_STEP, True)
    assert (reward, terminated, truncated) == (0.0, False, False) and obs3.startswith("What is")


# ------------------------------------------------------------------------- the README's examples
# The original GEM's README, verbatim.
README_INTERFACE = '''
import gem

# List all supported environments
gem.print_envs()

# Initialize the environment
env = gem.make("game:GuessTheNumber-v0")

# Reset the environment to generate the first observation
observation, info = env.reset()

# Start the agent-environment loop
while True:
    action = env.sample_random_action() # insert policy here, e.g.,
    # (pseudocode) action = llm.generate(observation)

    # apply action and receive next observation, reward
    # and whether the episode has ended
    next_observation, reward, terminated, truncated, info = env.step(action)
    print("OBS", observation)
    print("ACT", action)

    # update the policy (online) here
    # e.g., policy = learn(policy, observation, action, reward, info)

    observation = next_observation
    # Exit when the episode terminates
    if terminated or truncated:
        break
'''

README_PYTHON_TOOL = '''
from transformers import AutoTokenizer

import gem
from gem.tools.python_code_tool import PythonCodeTool
from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.wrappers.wrapper_factory import WRAPPER_FACTORY

env = gem.make("math:GSM8K")
tool = PythonCodeTool()
wrapped_env = ToolEnvWrapper(env, tools=[tool])
wrapped_env = WRAPPER_FACTORY["concat_chat"](
    wrapped_env, tokenizer=AutoTokenizer.from_pretrained("Qwen/Qwen3-0.6B")
)
obs, info = wrapped_env.reset()

# we ignore the obs and use a dummy action
dummy_action = "<think>Let me compare 9.9 and 0.11 using python.</think><python>print('9.9 > 9.11?', 9.9 > 9.11)</python>"
obs, reward, terminated, truncated, info = wrapped_env.step(dummy_action)
print(obs)
# continue to sample the next response given the tool results ...

wrapped_env.close()
'''

README_SEARCH_TOOL = '''
# assume you have search server running

env = gem.make("game:GuessTheNumber-v0", max_turns=2)
tool = SearchTool(search_url="http://localhost:8000/retrieve", topk=2)
wrapped_env = ToolEnvWrapper(env, tools=[tool], max_tool_uses=1)
wrapped_env = WRAPPER_FACTORY['concat_chat'](wrapped_env, tokenizer=AutoTokenizer.from_pretrained("Qwen/Qwen3-0.6B"))
wrapped_env.reset()

dummy_action = "<think>I need to search for Python list comprehension examples</think><search>Python list comprehension examples</search>"
obs, reward, terminated, truncated, info = wrapped_env.step(dummy_action)
print(obs)
'''


@pytest.fixture
def offline_readme(monkeypatch, mosec_style_server):
    """What the README assumes, offline: the hub tokenizer and dataset, and a search server on port 8000."""
    transformers = pytest.importorskip("transformers")
    from gem.tools import search_tool
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tokenizer = get_tiny_tokenizer()
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", classmethod(lambda cls, *a, **k: tokenizer))
    registry = gem.envs.registration.registry
    monkeypatch.setitem(registry, "math:GSM8K", dataclasses.replace(registry["math:Arithmetic"], id="math:GSM8K"))
    normalize = search_tool.normalize_search_url
    monkeypatch.setattr(search_tool, "normalize_search_url",
                        lambda url: normalize(url.replace("http://localhost:8000/retrieve", mosec_style_server)))


def test_readme_examples_run_verbatim(offline_readme, capsys):
    namespace: dict = {}
    exec(compile(README_INTERFACE, "README interface", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "game:GuessTheNumber-v0" in printed and printed.count("ACT \\boxed{") >= 1
    assert namespace["terminated"] or namespace["truncated"]

    exec(compile(README_PYTHON_TOOL, "README python tool", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "Code execution result: 9.9 > 9.11? True" in printed
    assert namespace["reward"] == 0.0 and not namespace["terminated"] and namespace["info"]["use_tool"]

    from gem.tools.search_tool import SearchTool  # the complete search example's imports

    namespace["SearchTool"] = SearchTool
    exec(compile(README_SEARCH_TOOL, "README search tool", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "Doc 1(Title: " in printed and "Reached the maximum number of tool uses" in printed
    assert namespace["info"]["tool_type"] == "search" and not namespace["info"]["tool_error"]


# ------------------------------------------------------------ an original-style env through everything
def test_original_style_env_passes_check_env():
    check_env(gem.make(ORIGINAL_ID))


@pytest.mark.parametrize("backend", ["sync", "thread", "process"])
def test_original_style_env_through_vector_envs_and_wrappers(backend):
    wrappers = [partial(ToolEnvWrapper, tools=[_python_tool()], max_tool_uses=2), WRAPPER_FACTORY["concat"],
                WRAPPER_FACTORY["episode_tracking"]]
    vec = gem.make_vec([ORIGINAL_ID] * 2, wrappers=wrappers, backend=backend)
    try:
        obs, infos = vec.reset(seed=10)
        assert all("What is" in o and "<python>" in o for o in obs)
        obs2, rewards, terminated, truncated, infos = vec.step(["<python>print(40 + 2)</python>", "\\boxed{-1}"])
        assert "42" in obs2[0] and not terminated[0] and terminated[1] and rewards[1] == 0.0
        assert infos[1]["final_info"]["episode"]["length"] == 1 and obs2[1].startswith("What is")  # reset
        first = obs[0].split("\n")[0]
        answer = sum(map(int, re.findall(r"\d+", first)[:2]))
        obs3, rewards, terminated, *_ = vec.step({0: f"\\boxed{{{answer}}}"})
        assert list(rewards) == [1.0] and list(terminated) == [True]
    finally:
        vec.close()


@pytest.fixture
def mock_server() -> Iterator[Any]:
    """The mock OpenAI-compatible server the eval tests use (its ``solver`` model answers ``env.answer``)."""
    for name in ("openai", "fastapi", "uvicorn"):
        pytest.importorskip(name)
    from gem.eval.mock_server import MockServer

    server = MockServer(env_ids=[ORIGINAL_ID]).start()
    try:
        yield server
    finally:
        server.stop()


def test_original_style_env_in_gem_eval(mock_server, tmp_path):
    from gem.cli import main

    server = mock_server
    out = tmp_path / "run"
    args = ["eval", ORIGINAL_ID, "--agent", "openai", "--model", "solver", "--base-url", server.base_url, "--out",
            str(out), "--no-progress", "--episodes", "3"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())["envs"][ORIGINAL_ID]
    assert summary["episodes"] == 3 and summary["success_rate"] == 1.0 and summary["mean_reward"] == 1.0
    assert main(args[:-2] + ["--episodes", "2", "--wrappers", "python_tool", "--out", str(tmp_path / "tool")]) == 0
    tool = json.loads((tmp_path / "tool" / "summary.json").read_text())["envs"][ORIGINAL_ID]
    assert tool["success_rate"] == 1.0 and tool["mean_tool_calls"] == 1.0


def test_signatures_match_the_original():
    from gem.tools.mcp_tool import MCPTool
    from gem.tools.search_tool import SearchTool
    from gem.utils import seeding

    assert list(inspect.signature(ToolEnvWrapper.step).parameters) == ["self", "action", "verbose"]
    assert inspect.signature(seeding.set_seed).parameters["seed"].default is None
    assert list(inspect.signature(SearchTool.__init__).parameters)[1:5] == ["num_workers", "search_url", "topk", "timeout"]
    assert list(inspect.signature(MCPTool.from_config_file).parameters)[:1] == ["config_path"]
    assert list(inspect.signature(gem.make_vec).parameters)[:5] == ["env_ids", "wrappers", "vec_kwargs", "async_mode", "seed"]


def test_env_id_and_entry_point_as_the_original_make_sets_them():
    env = gem.make(ORIGINAL_ID)
    assert env.env_id == ORIGINAL_ID and env.entry_point == "tests.compat.test_compat_api:OriginalStyleAddEnv"
    wrapped = WRAPPER_FACTORY["concat"](env)
    assert wrapped.env_id == ORIGINAL_ID and wrapped.entry_point == env.entry_point
    env.env_id, env.entry_point = "renamed", OriginalStyleAddEnv  # code written for the original sets them
    assert (env.env_id, env.entry_point, wrapped.env_id) == ("renamed", OriginalStyleAddEnv, "renamed")
    direct = OriginalStyleAddEnv()
    assert direct.env_id is None and direct.entry_point is None
