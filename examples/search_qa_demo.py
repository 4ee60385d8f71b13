"""Search QA end to end: start a retrieval server, let a scripted agent search and answer, stop the server.

    pip install -e ".[search]"    # in the GEM checkout
    python examples/search_qa_demo.py [--episodes 5] [--env qa:FictionalSearch-MultiHop] [--backend dense]

What happens:
1. The env's fictional world is written as a JSONL corpus (one document per person, town, company).
2. ``python -m gem.services.search.retrieval_server`` indexes it (BM25) on 127.0.0.1, a free port.
3. The env is wrapped with ``ToolEnvWrapper(env, tools=[SearchTool(search_url=...)])``.
4. A scripted agent reads each question, searches each entity on the way, and answers.
Swap the scripted agent for an LLM (gem.agents) to train or evaluate a real model on the same loop.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import gem
from gem.envs.qa_search.env import FictionalSearchAgent
from gem.services.search.launch import start_server_process
from gem.tools.search_tool import SearchTool
from gem.tools.tool_env_wrapper import ToolEnvWrapper


def run_episode(env: ToolEnvWrapper, seed: int) -> float:
    obs, _ = env.reset(seed=seed)
    agent = FictionalSearchAgent()
    agent.reset(obs)
    print(f"\n=== episode {seed}: {obs.split('Question:')[1].splitlines()[0].strip()}")
    while True:
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        print(f"  agent: {action}")
        print(f"  env:   {obs.strip()[:300]}")
        if terminated or truncated:
            print(f"  reward {reward}, correct={info.get('correct')}, gold answer {env.unwrapped.answer!r}")
            return reward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="qa:FictionalSearch", help="a search QA env id")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--backend", choices=("bm25", "dense"), default="bm25")
    args = parser.parse_args()

    env = gem.make(args.env)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = env.unwrapped.write_corpus(Path(tmp) / "corpus.jsonl")
        server_args = ["--corpus_path", str(corpus), "--backend", args.backend]
        print(f"Starting the retrieval server over {corpus} ...")
        with start_server_process("gem.services.search.retrieval_server", server_args) as server:
            print(f"Server ready at {server.url}: {server.health()}")
            tool_env = ToolEnvWrapper(env, tools=[SearchTool(search_url=server.url, topk=3)])
            rewards = [run_episode(tool_env, seed) for seed in range(args.episodes)]
            tool_env.close()
        print(f"\nServer stopped. Mean reward over {len(rewards)} episodes: {sum(rewards) / len(rewards):.2f}")


if __name__ == "__main__":
    main()
