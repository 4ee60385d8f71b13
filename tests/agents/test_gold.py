"""The ``gold`` agent (reads the answer key): it solves every single-turn family through the whole
pipeline, and refuses envs that keep no answer key."""

from __future__ import annotations

import json

import pytest

import gem
from gem.agents import GoldAgent, check_agent, make_agent, run_episode
from gem.agents.gold import gold_reply
from gem.agents.registry import AGENTS, UNATTENDED
from gem.cli import main
from tests.conftest import needs_extra

# One offline id per single-turn family (rg needs the rg extra).
FAMILIES = {
    "math": "math:Arithmetic",
    "code": "code:Bundled",
    "logic": "logic:RuleReasoning-d0",
    "qa": "qa:FictionalSearch",
    "rg": "rg:basic_arithmetic",
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_gold_solves_every_single_turn_family(family) -> None:
    if family == "rg":
        needs_extra("rg")
    env = gem.make(FAMILIES[family])
    check_agent("gold", env)
    agent = make_agent("gold", env)
    assert isinstance(agent, GoldAgent)
    episodes = [run_episode(env, agent, seed=seed, record=True) for seed in range(4)]
    assert all(ep.success and ep.total_reward == 1.0 for ep in episodes), [ep.actions for ep in episodes]
    # the reply carries the answer in the env's own format
    env.reset(seed=0)
    reply = gold_reply(env)
    if family == "code":
        assert reply.startswith("```python\n")
    elif family == "qa":
        assert reply.startswith("<answer>") and reply.endswith("</answer>")
    else:
        assert reply.startswith("\\boxed{")


def test_gold_replies_are_graded_like_any_reply() -> None:
    # The agent only writes the answer key of the problem in play; the env grades it as any reply,
    # so the answer of another problem fails.
    env = gem.make("math:Arithmetic")
    env.reset(seed=0)
    other = gold_reply(env)
    env.reset(seed=1)
    assert gold_reply(env) != other
    _, reward, terminated, _, info = env.step(other)
    assert terminated and reward == 0.0 and info.get("correct") is False


def test_gold_refuses_envs_without_an_answer_key() -> None:
    for env_id in ("game:GuessTheNumber-v0-easy", "terminal:CountLines"):
        env = gem.make(env_id)
        with pytest.raises(ValueError, match="keeps no answer key") as exc:
            check_agent("gold", env)
        assert "Agents that can:" in str(exc.value)
        env.close()


def test_gold_is_in_the_agent_table_and_named_as_a_cheat() -> None:
    assert "gold" in AGENTS and "gold" in UNATTENDED
    description = AGENTS["gold"].description
    assert "answer key" in description and "never a baseline" in description


def test_gem_run_agent_gold_reaches_success(capsys) -> None:
    assert main(["run", "math:Arithmetic", "--agent", "gold", "--episodes", "5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 5 and summary["success_rate"] == 1.0 and summary["unscored"] == 0


def test_gem_eval_agent_gold_smoke_tests_a_pipeline(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["eval", "math:Arithmetic", "qa:FictionalSearch", "--agent", "gold", "--episodes", "3",
                 "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["success_rate"] == 1.0 and summary["overall"]["episodes"] == 6
