"""Train with TRL's ``GRPOTrainer`` on an env reached through OpenEnv's protocol (CPU, tiny model).

The trainer is examples/trl/gem_trl.py unchanged; its env id is ``openenv:<url>``, so every reset
and step of its reward function goes over OpenEnv's WebSocket protocol. Without ``--url`` the
example serves ``--env-id`` itself (``gem serve --protocol openenv`` in a thread); with it, any
OpenEnv server whose action is text (a ``gem export openenv`` package, another framework's env).

    python examples/interop/trl_openenv.py --steps 2 --cpu
    python examples/interop/trl_openenv.py --url http://127.0.0.1:8000 --model Qwen/Qwen3-0.6B --steps 100
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent


def _trl_example() -> Any:
    spec = importlib.util.spec_from_file_location("gem_trl", HERE.parent / "trl" / "gem_trl.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def openenv_server(env_id: str) -> Iterator[str]:
    """GEM's OpenEnv-protocol server for ``env_id`` on 127.0.0.1 (a free port); yields its URL."""
    import uvicorn

    from gem.interop.openenv.server import create_openenv_app
    from gem.http.limits import ServerLimits, uvicorn_config

    server = uvicorn.Server(uvicorn_config(create_openenv_app([env_id]), "127.0.0.1", 0, ServerLimits(),
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the OpenEnv server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=None, help="an OpenEnv server (default: serve --env-id here)")
    p.add_argument("--env-id", default="game:GuessTheNumber-v0-easy", help="the GEM id to serve without --url")
    args, trainer_args = p.parse_known_args(argv)  # the rest goes to examples/trl/gem_trl.py
    trl_example = _trl_example()
    if args.url:
        return trl_example.main(["--env", f"openenv:{args.url}", *trainer_args])
    with openenv_server(args.env_id) as url:
        return trl_example.main(["--env", f"openenv:{url}", *trainer_args])


if __name__ == "__main__":
    sys.exit(main())
