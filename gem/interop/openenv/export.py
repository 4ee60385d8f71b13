"""``gem export openenv ID DIR``: an OpenEnv env package that serves one GEM id.

The package has OpenEnv's layout (``openenv.yaml``, ``pyproject.toml`` with a ``server`` script,
``server/app.py`` with ``app`` and ``main()``, ``server/Dockerfile``, a README). Its app is
:func:`gem.interop.openenv.server.create_openenv_app` for the id, so it speaks OpenEnv's protocol
with every check of ``gem serve``. It depends on ``gem-llm`` (the id's extra and ``server``) and, as
OpenEnv's tools require of every env package, on ``openenv-core`` (the app itself does not import it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Union

from gem.envs.registration import spec as lookup_spec
from gem.version import __version__

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
from gem.server.limits import ServerLimits, is_loopback, read_secret, scrub_environ, uvicorn_config
from gem.server.protocol import TOKEN_ENV_VAR

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

_YAML = """spec_version: 1
name: {name}
type: space
runtime: fastapi
app: server.app:app
port: 8000
"""

_PYPROJECT = """[build-system]
requires = ["setuptools>=45", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-{name}"
version = "0.1.0"
description = "The GEM env {env_id} as an OpenEnv environment"
requires-python = ">=3.10"
dependencies = ["gem-llm[{extras}]>={version}", "openenv-core>=0.2.0"]  # openenv-core: OpenEnv's tools expect it

[project.scripts]
server = "{name}.server.app:main"

[tool.setuptools]
packages = ["{name}", "{name}.server"]
package-dir = {{ "{name}" = ".", "{name}.server" = "server" }}
"""

_DOCKERFILE = """FROM python:3.11-slim
WORKDIR /app/env
COPY . /app/env
RUN pip install --no-cache-dir .
ENV PYTHONPATH=/app/env
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \\
    CMD python -c "import urllib.request; urllib.request.urlopen('http://localhost:8000/health')"
# Give clients a token (docker run -e GEM_SERVER_TOKEN=...), or set GEM_INSECURE_NO_TOKEN=1 to serve openly.
CMD ["python", "-m", "server.app", "--host", "0.0.0.0", "--port", "8000"]
"""

_README = """# {env_id} (GEM) for OpenEnv

The GEM environment `{env_id}` served over OpenEnv's protocol. {description}

- Action: `{{"text": "<the agent's reply>"}}`.
- Observation: `{{"text": ..., "metadata": {{...GEM's info, "terminated", "truncated"}}}}`, with the
  step's `reward` and `done`.
- Reset data: `seed` (the same seed gives the same episode), `episode_id`.

Run: `pip install . && python -m server.app` (127.0.0.1:8000), then connect any OpenEnv client, e.g.
`openenv.core.GenericEnvClient(base_url="http://127.0.0.1:8000")`. Docker: `docker build -f server/Dockerfile .`.
"""


def package_name(env_id: str) -> str:
    """A Python package name for ``env_id``: ``game:Wordle-v0-easy`` -> ``gem_game_wordle_v0_easy``."""
    return "gem_" + re.sub(r"[^0-9a-zA-Z]+", "_", env_id).strip("_").lower()


def export_openenv(env_id: str, directory: Union[str, Path], overwrite: bool = False) -> Path:
    """Write the OpenEnv package for ``env_id`` into ``directory`` (created); returns it.

    Raises ``FileExistsError`` if ``directory`` is a non-empty directory and not ``overwrite``.
    """
    env_spec = lookup_spec(env_id)  # an unknown id fails here, with suggestions
    out = Path(directory)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty; pass overwrite=True (--force) to write into it.")
    name = package_name(env_id)
    extras = ",".join(dict.fromkeys(["server", *([env_spec.extra] if env_spec.extra else [])]))
    files = {
        "openenv.yaml": _YAML.format(name=name),
        "pyproject.toml": _PYPROJECT.format(name=name, env_id=env_id, extras=extras, version=__version__),
        "README.md": _README.format(env_id=env_id, description=env_spec.description or ""),
        "__init__.py": f'"""The GEM env {env_id!r} as an OpenEnv environment."""\n',
        "server/__init__.py": "",
        "server/app.py": _APP.format(env_id=env_id),
        "server/Dockerfile": _DOCKERFILE,
    }
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return out
