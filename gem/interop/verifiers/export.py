"""``gem export verifiers ID DIR``: a verifiers environment package that plays one GEM id.

The package is what verifiers' loader expects of a native (``verifiers.v1``) package: a module named
after the taskset id exporting one ``Taskset`` subclass and one ``Env`` subclass through ``__all__``.

- The taskset yields one task per seed (task ``i`` is the GEM episode of seed ``seed_offset + i``,
  endless, as procedural tasksets are: runs bound it with ``--num-tasks``). A task's prompt is the
  episode's first user message as GEM's agents send it (:func:`gem.utils.prompting.user_content`).
- The env plays the episode as the run's user: each model reply is the GEM action, the next
  observation is the next user turn, and the episode's end ends the exchange. The trace's reward is
  GEM's: ``gem_reward`` is the episode's total; ``trace.info`` holds each step's reward, the end
  flags and the last observation (``gem_rewards``, ``gem_terminated``, ``gem_truncated``,
  ``gem_last_observation``), so the episode can be read back exactly; ``gem_observation0`` and
  ``gem_steps`` (each step's action, observation, reward and end flags) make the trace a GEM
  trajectory record with the turns' token ids (:func:`gem.interop.tokens.verifiers_record`).
- The player's default program is verifiers' ``null`` harness (plain chat, no tools) on a
  subprocess runtime, so an eval needs only an OpenAI-compatible endpoint.

The generated code imports only ``verifiers`` and ``gem`` (``gem.make`` and its prompting helper),
so it runs where verifiers is installed without GEM's other extras (see docs/interop.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Union

from gem.envs.registration import spec as lookup_spec
from gem.interop.wheel import build_gem_wheel
from gem.version import __version__

_TASKSET = '''"""The GEM env {env_id!r} as a verifiers taskset (written by `gem export verifiers`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import verifiers.v1 as vf

import gem
from gem.utils.prompting import user_content

ENV_ID = {env_id!r}


class GemTasksetConfig(vf.TasksetConfig):
    env_id: str = ENV_ID
    """The GEM id whose episodes are the tasks."""
    seed_offset: int = 0
    """Task i is the episode of seed seed_offset + i."""


class GemData(vf.TaskData):
    info: dict
    """The GEM id and seed the env replays the episode from."""


class GemTask(vf.Task[GemData, vf.State, vf.TaskConfig]):
    pass


class GemEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(harness={{"id": "null"}}, runtime=vf.SubprocessConfig())
    max_steps: int = 1000
    """Steps after which an episode that has not ended is cut (counted as truncated)."""


class GemEnv(vf.Env[GemEnvConfig]):
    """The GEM episode of the task's seed, with the model as the agent and GEM as the user."""

    async def run(self, task, agents):
        env = gem.make(task.data.info["env_id"])
        rewards: list[float] = []
        steps: list[dict] = []
        try:
            observation, info = env.reset(seed=task.data.info["seed"])
            async with agents.player.interaction(task) as interaction:
                trace = interaction.trace
                trace.info.update(gem_env_id=task.data.info["env_id"], gem_seed=task.data.info["seed"],
                                  gem_rewards=rewards, gem_terminated=False, gem_truncated=False,
                                  gem_observation0=observation, gem_steps=steps)
                segment = await interaction.turn()  # the prompt is the first observation
                while not segment.terminated:
                    action = segment.last_reply
                    observation, reward, terminated, truncated, info = env.step(action)
                    rewards.append(float(reward))  # live in trace.info, step by step
                    steps.append({{"action": action, "observation": observation, "reward": float(reward),
                                  "terminated": bool(terminated), "truncated": bool(truncated)}})
                    if not (terminated or truncated) and len(rewards) >= self.config.max_steps:
                        truncated = True
                    if terminated or truncated:
                        trace.info.update(gem_terminated=bool(terminated), gem_truncated=bool(truncated))
                        break
                    segment = await interaction.turn(user_content(observation, info))
        finally:
            env.close()
        trace.info["gem_last_observation"] = user_content(observation, info)  # what a next turn would show
        trace.record_reward("gem_reward", sum(rewards), 1.0)


class GemTaskset(vf.Taskset[GemTask, GemTasksetConfig]):
    INFINITE = True

    def load(self) -> Iterator[GemTask]:
        env = gem.make(self.config.env_id)
        try:
            for i in itertools.count():
                seed = self.config.seed_offset + i
                observation, info = env.reset(seed=seed)
                yield GemTask(
                    GemData(
                        name=f"{{self.config.env_id}}#{{seed}}",
                        prompt=user_content(observation, info),
                        info={{"env_id": self.config.env_id, "seed": seed}},
                    ),
                    self.config.task,
                )
        finally:
            env.close()
'''

_INIT = '''"""The GEM env {env_id!r} for verifiers: `vf-eval {taskset_id} -n N ...` (see the README)."""

from {module}.taskset import GemEnv, GemTaskset

__all__ = ["GemEnv", "GemTaskset"]
'''

_CHECK = '''"""Failed rollouts of vf-eval runs: `python -m {module}.check [OUTPUT_DIR]` (default `outputs`).

vf-eval exits 0 even when rollouts fail (verifiers keeps a failed rollout as data: its errors are
in the run's traces.jsonl). This lists each failed rollout with its errors and exits 1 if there
are any, 2 if there is no run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def failures(output_dir: Path) -> tuple[int, list[str]]:
    """The number of rollouts under ``output_dir`` and a line for each one that failed."""
    count, failed = 0, []
    for traces in sorted(output_dir.glob("**/traces.jsonl")):
        for number, line in enumerate(traces.read_text().splitlines(), 1):
            if not line.strip():
                continue
            count += 1
            episode = json.loads(line)
            errors = list(episode.get("errors") or [])
            for trace in episode.get("traces") or []:
                errors += trace.get("errors") or []
            if errors or not episode.get("ok", False):
                what = "; ".join(f"{{e.get('type')}}: {{e.get('message')}}" for e in errors) or "not ok"
                failed.append(f"{{traces}}:{{number}}: {{what}}")
    return count, failed


def main() -> int:
    output_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "outputs")
    count, failed = failures(output_dir)
    if not count:
        print(f"no rollouts under {{output_dir}}", file=sys.stderr)
        return 2
    for line in failed:
        print(line)
    print(f"{{len(failed)}} of {{count}} rollouts failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''

_PYPROJECT = """[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "{taskset_id}"
version = "0.1.0"
description = "The GEM env {env_id} as a verifiers environment"
requires-python = ">=3.11"
dependencies = ["verifiers>=0.4", "gem-llm{extras}=={version}", "uv"]  # uv: the harness's runtime starts with it

[tool.setuptools]
packages = ["{module}"]
"""

_README = """# {env_id} (GEM) for verifiers

The GEM environment `{env_id}` as a verifiers taskset and env. {description}

Task i is GEM's episode of seed i; the model plays it turn by turn (plain chat, verifiers' `null`
harness) and the reward is GEM's (`gem_reward`, the episode's total).

In a virtual environment (activated: verifiers starts the harness with the `uv` on PATH), from this
folder; GEM comes from `vendor/`, the wheel of the GEM that wrote this package:

    pip install uv --find-links vendor .
    export OPENAI_API_KEY=<key>   # any value for a server that takes none (vLLM, SGLang)
    vf-eval {taskset_id} --model <model> --client.base-url http://127.0.0.1:8000/v1 --client.api-key-var OPENAI_API_KEY -n 10 --no-push
    python -m {module}.check outputs

`-n` bounds the run (the taskset is endless). vf-eval exits 0 even when rollouts fail (verifiers
keeps a failed rollout as data, in `outputs/<run>/traces.jsonl`); the last line lists each failed
rollout with its errors and exits 1 if there is one.
"""


def taskset_id(env_id: str) -> str:
    """The verifiers taskset id for ``env_id``: ``game:Wordle-v0-easy`` -> ``gem-game-wordle-v0-easy``."""
    return "gem-" + re.sub(r"[^0-9a-zA-Z]+", "-", env_id).strip("-").lower()


def export_verifiers(env_id: str, directory: Union[str, Path], overwrite: bool = False) -> Path:
    """Write the verifiers package for ``env_id`` into ``directory`` (created); returns it.

    Install it (``pip install uv --find-links DIR/vendor DIR``: GEM comes from the wheel in ``vendor/``)
    and run ``vf-eval <taskset id> -n N ...`` (:func:`taskset_id`; the README has the command).
    Raises ``FileExistsError`` if ``directory`` is a non-empty directory and not ``overwrite``.
    """
    env_spec = lookup_spec(env_id)
    out = Path(directory)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty; pass overwrite=True (--force) to write into it.")
    tid = taskset_id(env_id)
    module = tid.replace("-", "_")
    extras = f"[{env_spec.extra}]" if env_spec.extra else ""
    build_gem_wheel(out / "vendor")
    files = {
        "pyproject.toml": _PYPROJECT.format(taskset_id=tid, env_id=env_id, extras=extras, version=__version__, module=module),
        "README.md": _README.format(env_id=env_id, taskset_id=tid, module=module, description=env_spec.description or ""),
        f"{module}/__init__.py": _INIT.format(env_id=env_id, taskset_id=tid, module=module),
        f"{module}/taskset.py": _TASKSET.format(env_id=env_id),
        f"{module}/check.py": _CHECK.format(module=module),
    }
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return out
