"""The wire lives in gem.http; its former paths under gem.server are the same modules."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("name", ["limits", "protocol", "client"])
def test_a_former_server_path_is_the_wire_module(name):
    old = importlib.import_module(f"gem.server.{name}")
    assert old is importlib.import_module(f"gem.http.{name}")
    assert old.__name__ == f"gem.http.{name}"


def test_remote_env_keeps_its_names():
    import gem.server
    from gem.http.client import RemoteEnv, RemoteEnvError
    from gem.server.client import RemoteEnv as Former, RemoteEnvError as FormerError

    assert gem.server.RemoteEnv is RemoteEnv is Former and FormerError is RemoteEnvError
    from gem.server.limits import ServerLimits

    from gem.http.limits import ServerLimits as Limits

    assert ServerLimits is Limits


def test_the_wire_does_not_load_the_server_app():
    import subprocess
    import sys

    code = (
        "import sys, gem.http.limits, gem.http.protocol, gem.http.client\n"
        "print(sorted(m for m in ('gem.server.app', 'fastapi', 'gem.envs.math_env') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
