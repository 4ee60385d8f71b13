"""``gem export openenv ID DIR``: an OpenEnv env package that serves one GEM id.

The package has the layout of OpenEnv's own envs (``openenv init``'s template), so OpenEnv users find
what they expect and OpenEnv's tools accept it:

- ``openenv.yaml`` with a ``validation:`` block (reward range, resources, the Docker build and a
  runtime plan, ``validation/runtime.json``: one episode of the id, played by its solver where it has
  one), which ``openenv validate`` reads;
- ``models.py`` (``GemAction``, ``GemObservation``, ``GemState`` on OpenEnv's typed models) and
  ``client.py`` (``GemEnv``, an ``EnvClient``), exported by the package's ``__init__``;
- ``server/app.py`` (``app`` and ``main()``): :func:`gem.interop.openenv.server.create_openenv_app` for
  the id, so it speaks OpenEnv's protocol with every check of ``gem serve``;
- ``server/Dockerfile``, ``pyproject.toml`` (a ``server`` script) and ``uv.lock`` (``uv lock``, when uv
  is installed and the index reachable);
- ``vendor/gem_llm-<version>-py3-none-any.whl``: the GEM that exported the package, as a wheel, so
  installing it (``uv sync``, ``pip install --find-links vendor .``, the Docker build) needs no GEM
  from an index.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional, Union

from gem.envs.registration import spec as lookup_spec
from gem.interop.wheel import build_gem_wheel
from gem.version import __version__

logger = logging.getLogger(__name__)

MAX_PLAN_ACTIONS = 100  # OpenEnv's runtime plan takes 1 to 100 actions
MAX_PLAN_BYTES = 60_000  # and at most 64 KiB of JSON
LOCK_TIMEOUT_S = 600.0

_APP = '''"""OpenEnv server for the GEM env {env_id!r} (written by `gem export openenv`).

Run it with `python -m server.app` (or the `server` script, or uvicorn server.app:app). A token for
clients comes from $GEM_SERVER_TOKEN or --token-file; without one it serves only this machine
(127.0.0.1) unless --insecure-no-token (or GEM_INSECURE_NO_TOKEN=1) says otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os

from gem.interop.openenv.server import create_openenv_app
from gem.http.limits import ServerLimits, is_loopback, read_secret, scrub_environ, uvicorn_config
from gem.http.protocol import TOKEN_ENV_VAR

ENV_ID = {env_id!r}

_tokens = read_secret(TOKEN_ENV_VAR, os.environ.get("GEM_SERVER_TOKEN_FILE"))
scrub_environ(TOKEN_ENV_VAR)
app = create_openenv_app([ENV_ID], tokens=_tokens)


def main(host: str = "127.0.0.1", port: int = 8000, insecure_no_token: bool = False) -> None:
    """Serve ``app`` with GEM's connection limits (slow clients cut, connections capped)."""
    import uvicorn

    insecure_no_token = insecure_no_token or os.environ.get("GEM_INSECURE_NO_TOKEN") == "1"
    if not _tokens and not is_loopback(host) and not insecure_no_token:
        raise SystemExit(
            f"Refusing to serve {{host}} without a token: set ${{TOKEN_ENV_VAR}} (or GEM_SERVER_TOKEN_FILE), "
            "or pass --insecure-no-token to let anyone who can reach it play."
        )
    uvicorn.Server(uvicorn_config(app, host, port, ServerLimits(), log_level="warning")).run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=f"Serve {{ENV_ID}} over OpenEnv's protocol.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--insecure-no-token", action="store_true")
    args = parser.parse_args()
    main(args.host, args.port, args.insecure_no_token)
'''

_MODELS = '''"""The messages of the GEM env {env_id!r}: OpenEnv's typed Action, Observation and State.

GEM's wire: an action is the agent's text; an observation is the env's text, with the step's
`reward` and `done` and, in `metadata`, GEM's info and the end flags `terminated` and `truncated`.
"""

from __future__ import annotations

from typing import Optional

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class GemAction(Action):
    """The agent's reply: any text (GEM's `step(action)`)."""

    text: str = Field(..., description="The agent's action: any text")


class GemObservation(Observation):
    """The env's text; `metadata` holds GEM's info, `terminated` and `truncated`."""

    text: str = Field(default="", description="The observation (GEM's observation string)")


class GemState(State):
    """OpenEnv's `episode_id`/`step_count`, and the GEM id and seed the session plays."""

    env_id: Optional[str] = Field(default=None, description="The GEM id this session plays")
    seed: Optional[int] = Field(default=None, description="The seed of the current episode, if one was given")
'''

_CLIENT = '''"""A typed OpenEnv client for the GEM env {env_id!r}.

    with GemEnv(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)
        print(result.observation.text)
        result = env.step(GemAction(text="..."))
        print(result.reward, result.done, result.observation.metadata["terminated"])

A server with a token takes it as `headers={{"Authorization": "Bearer <token>"}}`.
"""

from __future__ import annotations

from typing import Any, Dict

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from .models import GemAction, GemObservation, GemState


class GemEnv(EnvClient[GemAction, GemObservation, GemState]):
    """One WebSocket session with the server: `reset(seed=...)`, `step(GemAction)`, `state()`."""

    def _step_payload(self, action: GemAction) -> Dict[str, Any]:
        return {{"text": action.text, "metadata": action.metadata}}

    def _parse_result(self, payload: Dict[str, Any]) -> StepResult[GemObservation]:
        data = payload.get("observation") or {{}}
        observation = GemObservation(
            text=data.get("text", ""),
            metadata=data.get("metadata") or {{}},
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: Dict[str, Any]) -> GemState:
        return GemState.model_validate(payload)
'''

_INIT = '''"""The GEM env {env_id!r} as an OpenEnv environment (written by `gem export openenv`)."""

from .client import GemEnv
from .models import GemAction, GemObservation, GemState

__all__ = ["GemAction", "GemEnv", "GemObservation", "GemState"]
'''

_YAML = """spec_version: 1
name: {name}
version: 0.1.0
type: space
runtime: fastapi
app: server.app:app
port: 8000
# What `openenv validate` checks. GEM pays each step one of the env's reward levels (or a share of
# its success reward); the runtime plan is one episode of the id, played by its solver where it has one.
validation:
  reward:
    range: [{low}, {high}]
    oracle_tolerance: 0.0
    floor_margin: 0.1
  resources:
    cpu: 1.0
    memory_mb: 2048
    disk_mb: 2048
    episode_timeout_s: 300.0
  capabilities:
    verifier:
      kind: reward_channel
  types:
    tags: [gem, gem-{family}]
  execution:
    kind: openenv_ws
    probe_path: validation/runtime.json
    dockerfile: server/Dockerfile
    context: .
"""

_PYPROJECT = """[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-{name}"
version = "0.1.0"
description = "The GEM env {env_id} as an OpenEnv environment"
requires-python = ">=3.10"
dependencies = ["gem-llm[{extras}]=={version}", "openenv>=0.10"]

[project.scripts]
server = "{name}.server.app:main"

[tool.setuptools]
packages = ["{name}", "{name}.server"]
package-dir = {{ "{name}" = ".", "{name}.server" = "server" }}

# GEM comes from the wheel in vendor/ (the GEM that wrote this package): uv reads this table;
# pip needs `--find-links vendor`.
[tool.uv.sources]
gem-llm = {{ path = "vendor/{wheel}" }}
"""

_DOCKERFILE = """FROM python:3.11-slim
WORKDIR /app/env
COPY . /app/env
# uv installs the locked dependencies (uv.lock) and GEM from vendor/, the wheel of the GEM that wrote this package.
RUN pip install --no-cache-dir "uv>=0.5" && \\
    if [ -f uv.lock ]; then uv sync --frozen --no-dev --no-editable; else uv sync --no-dev --no-editable; fi && \\
    rm -rf /root/.cache/uv
ENV PATH="/app/env/.venv/bin:$PATH" PYTHONPATH=/app/env
# OpenEnv's clients and its validator send no token, so the image serves without one: publish the port on
# this machine only (docker run -p 127.0.0.1:8000:8000), or set a token (docker run -e GEM_SERVER_TOKEN=...),
# which every client then has to send.
ENV GEM_INSECURE_NO_TOKEN=1
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \\
    CMD python -c "import urllib.request; urllib.request.urlopen('http://localhost:8000/health')"
CMD ["python", "-m", "server.app", "--host", "0.0.0.0", "--port", "8000"]
"""

_README = """# {env_id} (GEM) for OpenEnv

The GEM environment `{env_id}` served over OpenEnv's protocol. {description}

- Action: `GemAction(text="<the agent's reply>")` (on the wire `{{"text": ...}}`).
- Observation: `GemObservation(text=..., metadata={{...GEM's info, "terminated", "truncated"}})`, with
  the step's `reward` and `done`.
- Reset: `seed` (the same seed gives the same episode), `episode_id`.

Install and serve on 127.0.0.1:8000 (GEM comes from `vendor/`, the wheel of the GEM that wrote this
package; `uv sync` follows `uv.lock`):

    uv sync && uv run server
    # or: pip install --find-links vendor . && python -m server.app

Play it with the typed client (or OpenEnv's `GenericEnvClient`):

    from {name} import GemAction, GemEnv

    with GemEnv(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)
        result = env.step(GemAction(text="..."))
        print(result.reward, result.done)

Docker (the image serves without a token, so publish it on this machine only, or pass
`-e GEM_SERVER_TOKEN=...`):

    docker build -t {image} -f server/Dockerfile .
    docker run -p 127.0.0.1:8000:8000 {image}

Validate: `openenv validate .` (builds the image with Docker and plays `validation/runtime.json`);
without Docker, `openenv validate . --skip-build` runs the static checks.
"""


def package_name(env_id: str) -> str:
    """A Python package name for ``env_id``: ``game:Wordle-v0-easy`` -> ``gem_game_wordle_v0_easy``."""
    return "gem_" + re.sub(r"[^0-9a-zA-Z]+", "_", env_id).strip("_").lower()


def export_openenv(
    env_id: str, directory: Union[str, Path], overwrite: bool = False, lock: bool = True,
) -> Path:
    """Write the OpenEnv package for ``env_id`` into ``directory`` (created); returns it.

    ``lock``: run ``uv lock`` in the package (it needs ``uv`` on PATH and the package index); where it
    cannot, the package is written without ``uv.lock`` and a warning says so (``uv sync`` and the Docker
    build then resolve the dependencies themselves). Raises ``FileExistsError`` if ``directory`` is a
    non-empty directory and not ``overwrite``.
    """
    env_spec = lookup_spec(env_id)  # an unknown id fails here, with suggestions
    out = Path(directory)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty; pass overwrite=True (--force) to write into it.")
    name = package_name(env_id)
    extras = ",".join(dict.fromkeys(["server", *([env_spec.extra] if env_spec.extra else [])]))
    actions, (low, high) = _reference_episode(env_id)
    wheel = build_gem_wheel(out / "vendor")
    plan = {
        "plan_schema_version": "1",
        "reset": {"episode_id": f"{name}-seed-0", "seed": 0},
        "actions": [{"text": a} for a in actions],
    }
    files = {
        "openenv.yaml": _YAML.format(name=name, low=low, high=high, family=re.sub(r"[^0-9a-z]+", "-", env_spec.family.lower())),
        "pyproject.toml": _PYPROJECT.format(name=name, env_id=env_id, extras=extras, version=__version__, wheel=wheel.name),
        "README.md": _README.format(env_id=env_id, description=env_spec.description or "", name=name,
                                    image=name.replace("_", "-")),
        "__init__.py": _INIT.format(env_id=env_id),
        "models.py": _MODELS.format(env_id=env_id),
        "client.py": _CLIENT.format(env_id=env_id),
        "server/__init__.py": "",
        "server/app.py": _APP.format(env_id=env_id),
        "server/Dockerfile": _DOCKERFILE,
        "validation/runtime.json": json.dumps(plan, indent=1) + "\n",
    }
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if lock:
        uv_lock(out)
    return out


def uv_lock(package: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Optional[Path]:
    """Run ``uv lock`` in ``package``; returns its ``uv.lock``, or None (with a warning) where it cannot."""
    uv = shutil.which("uv")
    if uv is None:
        logger.warning("uv is not installed, so %s has no uv.lock: run `uv lock` there (pip install uv).", package)
        return None
    try:
        done = subprocess.run([uv, "lock", "--directory", str(package)], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        logger.warning("`uv lock` in %s took over %.0f s; run it again there.", package, timeout_s)
        return None
    if done.returncode != 0:
        logger.warning("`uv lock` in %s failed (no uv.lock written):\n%s", package, done.stderr.strip()[-2000:])
        return None
    return package / "uv.lock"


def _reference_episode(env_id: str, seed: int = 0) -> tuple[list[str], tuple[float, float]]:
    """The actions of one episode of ``env_id`` (its solver's where it has one, else its own random
    actions) and the range its step rewards lie in (its reward levels; 0 and 1 at least)."""
    from gem.envs.registration import make

    try:
        env = make(env_id)
    except Exception as exc:  # e.g. the id's extra is not installed here: a plan of one empty reply
        logger.warning("Cannot make %s here (%s: %s); its runtime plan is one empty action and its reward "
                       "range [-1, 1]: edit validation/runtime.json and openenv.yaml.", env_id, type(exc).__name__, exc)
        return [""], (-1.0, 1.0)
    try:
        levels = [float(getattr(env, level)) for level in _reward_levels() if hasattr(env, level)]
        low, high = min([0.0, *levels]), max([1.0, *levels])
        obs, info = env.reset(seed=seed)
        try:
            agent = env.make_solver()
            agent.reset(obs, info)
            act = agent.act
        except NotImplementedError:
            act = lambda _obs, _info: env.sample_random_action()  # noqa: E731
        actions: list[str] = []
        size = 0
        while len(actions) < MAX_PLAN_ACTIONS:
            action = act(obs, info)
            size += len(json.dumps(action)) + 16
            if size > MAX_PLAN_BYTES:
                break
            actions.append(action)
            obs, reward, terminated, truncated, info = env.step(action)
            low, high = min(low, float(reward)), max(high, float(reward))
            if terminated or truncated:
                break
    finally:
        env.close()
    return actions or [""], (low, high)


def _reward_levels() -> tuple[str, ...]:
    from gem.core import REWARD_LEVELS

    return REWARD_LEVELS
