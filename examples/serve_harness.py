"""An outside agent harness: a plain OpenAI-SDK loop that plays a GEM env through `gem serve`'s HTTP
API, with its model calls sent through `gem proxy`, which records their exact token ids.

It uses only `openai` and `httpx` (no GEM import, no GEM agent): any harness can do what it does.
Per episode it

1. makes a session on `gem serve` (`POST /sessions`), resets it with a seed, and shows the model
   the observation (with the env's instruction, `info["suffix"]`, when it gives one);
2. asks the model through the proxy, naming the episode in the `X-GEM-Episode` header; the reply
   is the action it steps the env with (`POST /sessions/{id}/step`), until the env ends the episode;
3. posts the env's side of the episode (seed, first observation, each step as the server returned
   it) to the proxy (`POST /gem/episodes/{episode}`), which joins it with the recorded calls and
   writes one trajectory record: each turn's completion token ids and logprobs, and the env's rewards.

    gem serve game:GuessTheNumber-v0-easy --port 8002
    gem proxy --upstream http://127.0.0.1:8000/v1 --port 8001 --out proxy-run
    python examples/serve_harness.py --env-url http://127.0.0.1:8002 --proxy-url http://127.0.0.1:8001 \\
        --model SmolLM2-135M-Instruct --episodes 2

See docs/records.md ("An outside harness through gem serve, end to end").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import httpx
import openai


def prompt(observation: str, info: dict[str, Any]) -> str:
    """What the model is shown: the observation and the env's instruction for the next reply."""
    suffix = info.get("suffix") if isinstance(info, dict) else None
    return f"{observation}\n{suffix}" if suffix else observation


def play_episode(env: httpx.Client, model: openai.OpenAI, proxy: httpx.Client, *, env_id: str, model_name: str,
                 seed: int, episode: str, max_turns: int = 8, max_tokens: int = 32,
                 temperature: float = 0.8) -> dict[str, Any]:
    """One episode of ``env_id`` (seed ``seed``); returns the proxy's answer to the episode's end."""
    made = env.post("/sessions", json={"env_id": env_id})
    made.raise_for_status()
    session = made.json()["session_id"]
    try:
        first = env.post(f"/sessions/{session}/reset", json={"seed": seed})
        first.raise_for_status()
        observation0 = first.json()["observation"]
        messages = [{"role": "user", "content": prompt(observation0, first.json()["info"])}]
        steps = []
        for _ in range(max_turns):
            reply = model.chat.completions.create(
                model=model_name, messages=messages, max_tokens=max_tokens, temperature=temperature, seed=seed,
                extra_headers={"X-GEM-Episode": episode},
            )
            action = reply.choices[0].message.content or ""
            stepped = env.post(f"/sessions/{session}/step", json={"action": action})
            stepped.raise_for_status()
            out = stepped.json()
            steps.append({key: out[key] for key in ("observation", "reward", "terminated", "truncated")}
                         | {"action": action})
            if out["terminated"] or out["truncated"]:
                break
            messages += [{"role": "assistant", "content": action},
                         {"role": "user", "content": prompt(out["observation"], out["info"])}]
    finally:
        env.delete(f"/sessions/{session}")
    end = {"env_id": env_id, "seed": seed, "observation0": observation0, "steps": steps}
    answer = proxy.post(f"/gem/episodes/{episode}", json=end)
    answer.raise_for_status()
    return answer.json()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-url", required=True, help="gem serve's address, e.g. http://127.0.0.1:8002")
    p.add_argument("--proxy-url", required=True, help="gem proxy's address, e.g. http://127.0.0.1:8001")
    p.add_argument("--model", required=True, help="the model name the inference server serves")
    p.add_argument("--env-id", default="game:GuessTheNumber-v0-easy")
    p.add_argument("--episodes", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="episode i plays seed SEED + i")
    p.add_argument("--max-turns", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=32)
    args = p.parse_args(argv)
    headers = {"Authorization": f"Bearer {os.environ['GEM_SERVER_TOKEN']}"} if os.environ.get("GEM_SERVER_TOKEN") else {}
    model = openai.OpenAI(base_url=args.proxy_url.rstrip("/") + "/v1", api_key=os.environ.get("OPENAI_API_KEY", "EMPTY"),
                          timeout=600)
    with httpx.Client(base_url=args.env_url, headers=headers, timeout=120) as env, \
            httpx.Client(base_url=args.proxy_url, timeout=120) as proxy:
        for i in range(args.episodes):
            seed = args.seed + i
            answer = play_episode(env, model, proxy, env_id=args.env_id, model_name=args.model, seed=seed,
                                  episode=f"harness-{seed}", max_turns=args.max_turns, max_tokens=args.max_tokens)
            print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
