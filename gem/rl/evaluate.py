"""Held-out evaluation of a causal LM on a GEM env, and the record a learning run writes.

:func:`evaluate` plays one episode per held-out seed with greedy decoding (the same harness before
and after training, so the two numbers are comparable) and returns the success rate, the mean
return, their standard errors and ``n``. Held-out seeds start at :data:`EVAL_SEED_BASE`, far above
the seeds the trainer draws (``seed * 1_000_003 + step * groups + i``) for any run shorter than
about 100,000 steps.

:func:`write_record` writes a run's JSON record (``model``, ``env``, ``algo``, ``steps``,
``command``, ``seconds``, ``before``, ``after``, ``curve``); :func:`plot_record` draws its curve as a
PNG and :func:`render_markdown` the table that docs/rl.md shows (generated from the JSON, never typed).

Imports torch and transformers only inside :func:`evaluate`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EVAL_SEED_BASE = 1_000_000_000
RECORD_KEYS = ("model", "env", "algo", "steps", "command", "seconds", "before", "after", "curve")


def standard_error(p: float, n: int) -> float:
    """``sqrt(p (1 - p) / n)``: the standard error of a success rate measured on ``n`` episodes."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n!r}.")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a rate in [0, 1], got {p!r}.")
    return math.sqrt(p * (1.0 - p) / n)


def summarize(returns: Sequence[float], successes: Sequence[bool | None]) -> dict[str, Any]:
    """Success rate (over episodes that report success), mean return, their standard errors and n."""
    n = len(returns)
    if n == 0:
        raise ValueError("no episodes to summarize")
    known = [bool(s) for s in successes if s is not None]
    mean = sum(returns) / n
    var = sum((r - mean) ** 2 for r in returns) / (n - 1) if n > 1 else 0.0
    out: dict[str, Any] = {"n": n, "mean_return": mean, "mean_return_se": math.sqrt(var / n)}
    if known:
        p = sum(known) / len(known)
        out.update(success_rate=p, se=standard_error(p, len(known)), n_success_known=len(known))
    else:
        out["se"] = out["mean_return_se"]
    return out


def eval_seeds(n: int, base: int = EVAL_SEED_BASE) -> list[int]:
    """The ``n`` held-out seeds: ``base, base + 1, ...``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n!r}.")
    return [base + i for i in range(n)]


def evaluate(
    model: Any,
    tokenizer: Any,
    env_id: str,
    n: int,
    *,
    wrappers: str = "",
    batch: int = 32,
    max_new_tokens: int = 64,
    max_prompt_tokens: int = 768,
    max_turns: int = 50,
    chat: bool = True,
    seed_base: int = EVAL_SEED_BASE,
    progress: Any = None,
    greedy: bool = True,
    temperature: float = 1.0,
    sample_seed: int = 0,
    sampler: str = "plain",
    compute_dtype: Any = None,
) -> dict[str, Any]:
    """Episodes of ``model`` on ``env_id`` for ``n`` held-out seeds; see :func:`summarize`.

    Greedy by default; ``greedy=False`` samples at ``temperature`` from a generator seeded with
    ``sample_seed`` (the same draws before and after training, for a given model). ``progress``,
    when given, is called with the number of episodes finished so far. ``compute_dtype``
    (``"bfloat16"``, ``"float16"``) samples under ``torch.autocast`` (see :class:`gem.rl.hf.HFPolicy`).
    """
    from gem.rl.hf import HFPolicy
    from gem.rl.collect import collect_episodes
    from gem.vector import make_vec

    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch!r}.")
    seeds = eval_seeds(n, seed_base)
    policy = HFPolicy(model, tokenizer, max_new_tokens=max_new_tokens, max_prompt_tokens=max_prompt_tokens,
                      apply_chat_template=chat, greedy=greedy, temperature=temperature, seed=sample_seed,
                      sampler=sampler, compute_dtype=compute_dtype)
    fns = []
    if wrappers:
        from gem.wrappers.wrapper_factory import get_wrapper_fns

        fns = get_wrapper_fns(wrappers, tokenizer=tokenizer)
    returns: list[float] = []
    successes: list[bool | None] = []
    for start in range(0, n, batch):
        chunk = seeds[start:start + batch]
        vec = make_vec([env_id] * len(chunk), wrappers=fns, seed=0)
        try:
            episodes = collect_episodes(vec, policy, seeds=chunk, max_turns=max_turns)
        finally:
            vec.close()
        returns += [ep.total_reward for ep in episodes]
        successes += [ep.success for ep in episodes]
        if progress is not None:
            progress(len(returns))
    return summarize(returns, successes)


def metric(result: dict[str, Any]) -> str:
    """``success_rate`` when the env reports success, else ``mean_return``."""
    return "success_rate" if "success_rate" in result else "mean_return"


def improvement(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """After minus before, the combined standard error, and whether it exceeds 2.5 of them."""
    key = metric(before)
    if key != metric(after):
        raise ValueError("before and after must report the same metric")
    diff = after[key] - before[key]
    se = math.sqrt(before["se"] ** 2 + after["se"] ** 2)
    return {"metric": key, "diff": diff, "se": se, "z": diff / se if se > 0 else (math.inf if diff > 0 else 0.0),
            "clear": bool(diff > 2.5 * se)}


def write_record(path: str | Path, record: dict[str, Any]) -> Path:
    """Write a learning run's record as JSON (the keys of :data:`RECORD_KEYS` are required)."""
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        raise ValueError(f"record lacks {', '.join(missing)}")
    for side in ("before", "after"):
        if metric(record[side]) not in record[side] or "se" not in record[side] or "n" not in record[side]:
            raise ValueError(f"record[{side!r}] needs success_rate or mean_return, se and n")
    record = {**record, "improvement": improvement(record["before"], record["after"])}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def new_axes(figsize: tuple[float, float]) -> tuple[Any, Any]:
    """A matplotlib figure and axes drawn off screen (the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


def save_figure(fig: Any, ax: Any, title: str, path: str | Path) -> Path:
    """Title, legend and layout the way every learning figure has them; write ``path`` and close."""
    import matplotlib.pyplot as plt

    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_record(record: dict[str, Any], path: str | Path) -> Path:
    """The per-step training success rate (or mean return) with the before/after evaluations."""
    key = metric(record["before"])
    steps = [row["step"] for row in record["curve"]]
    values = [row[key] for row in record["curve"]]
    fig, ax = new_axes((7, 4))
    ax.plot(steps, values, lw=1, alpha=0.5, label=f"training batches ({key})")
    window = 5
    if len(values) >= window:
        smooth = [sum(values[i - window + 1:i + 1]) / window for i in range(window - 1, len(values))]
        ax.plot(steps[window - 1:], smooth, lw=2, label=f"{window}-step mean")
    for side, x in (("before", 0), ("after", record["steps"])):
        r = record[side]
        ax.errorbar([x], [r[key]], yerr=[2.5 * r["se"]], fmt="o", capsize=4,
                    label=f"held-out {side}: {r[key]:.3f} ± {r['se']:.3f} (n={r['n']})")
    ax.set_xlabel("step")
    ax.set_ylabel(key.replace("_", " "))
    return save_figure(fig, ax, f"{record['algo']} on {record['env']} ({Path(str(record['model'])).name})", path)


def command_differences(record: dict[str, Any]) -> str:
    """Where a record differs from what its ``command`` reads as: a record renamed after the run (its
    ``--name``), a run stopped by ``--max-minutes`` before ``--steps``. ``""`` when they agree."""
    import shlex

    try:
        argv = shlex.split(str(record.get("command", "")))
    except ValueError:
        return ""
    opts = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    notes = []
    name = record.get("name")
    if name and opts.get("--name") not in (None, name):
        notes.append(f"it ran as `--name {opts['--name']}` and the record was renamed `{name}` afterwards")
    steps = opts.get("--steps")
    if steps is not None and steps.isdigit() and int(steps) != record.get("steps"):
        why = f" by `--max-minutes {opts['--max-minutes']}`" if "--max-minutes" in opts else ""
        notes.append(f"its training was stopped{why} after {record.get('steps')} of the {steps} steps it asked for")
    return "; ".join(notes)


def render_markdown(records: Sequence[dict[str, Any]]) -> str:
    """The docs table of learning runs, exactly as recorded (rates to 3 decimals)."""
    lines = ["| record | env | algo | steps | training minutes (whole command) | held-out before | held-out after "
             "| after - before | clear (> 2.5 se) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        key = metric(r["before"])
        imp = improvement(r["before"], r["after"])
        b, a = r["before"], r["after"]
        algo = r["algo"] + (" (re-evaluated)" if str(r.get("training", "")).startswith("an earlier") else "")
        seconds = r.get("training_seconds")
        if seconds is None:
            seconds = sum(row.get("seconds", 0.0) for row in r["curve"])
        minutes = seconds / 60
        lines.append(
            f"| `{r.get('name', '')}` | `{r['env']}` | {algo} | {r['steps']} | {minutes:.1f} ({r['seconds'] / 60:.1f}) "
            f"| {b[key]:.3f} ± {b['se']:.3f} (n={b['n']}) | {a[key]:.3f} ± {a['se']:.3f} (n={a['n']}) "
            f"| {imp['diff']:+.3f} ± {imp['se']:.3f} | {'yes' if imp['clear'] else 'no'} |"
        )
    text = "\n".join(lines) + "\n"
    for r in records:
        name = r.get("name", "")
        text += f"\n`{name}`: `{r['command']}`\n"
        differs = command_differences(r)
        if differs:
            text += f"\nThe command above is the one that produced this record; {differs}.\n"
        served = r.get("served")
        if served:
            key = metric(served["before"])
            b, a = served["before"], served["after"]
            text += (
                f"\nServed by llama.cpp and played by `gem eval` on the same held-out seeds "
                f"(`python -m gem.rl.served docs/learning/{name}.json`): before {b[key]:.3f} ± {b['se']:.3f} "
                f"(n={b['n']}), after {a[key]:.3f} ± {a['se']:.3f} (n={a['n']}).\n"
            )
        if name:
            text += f"\n![{name}](learning/{name}.png)\n"
    return text


DOC_BEGIN, DOC_END = "<!-- learning-records:begin -->\n", "<!-- learning-records:end -->"


def replace_block(doc: str | Path, begin: str, end: str, body: str) -> bool:
    """Replace what stands between the markers ``begin`` and ``end`` of the markdown file ``doc``
    with ``body`` (``ValueError`` when the markers are missing); returns whether the file changed."""
    import re

    doc = Path(doc)
    text = doc.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"{doc} has no {begin.strip()} ... {end} block")
    new = pattern.sub(lambda _: begin + body + end, text)
    if new != text:
        doc.write_text(new, encoding="utf-8")
    return new != text


COMPARE_BEGIN, COMPARE_END = "<!-- method-comparison:begin -->\n", "<!-- method-comparison:end -->"
_PER_RUN_SETTINGS = ("seed", "threads")  # what may differ between the seeds of one protocol


def _protocol(record: dict[str, Any]) -> str:
    """What the runs of one comparison share: model, env, evaluation and every training setting but
    the seed (and the thread count, which changes speed, not the run)."""
    settings = {k: v for k, v in (record.get("settings") or {}).items() if k not in _PER_RUN_SETTINGS}
    return json.dumps({"model": record.get("model"), "env": record.get("env"), "eval": record.get("eval"),
                       "settings": settings}, sort_keys=True, default=str)


def method_comparison(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each method's held-out improvement over its training seeds, for every protocol that two or
    more methods (``algo``) ran.

    Records belong to one protocol when everything but the training seed is the same (model, env,
    evaluation, steps, batch, learning rate...). Per method: the seeds, each seed's improvement
    (after - before on the record's metric), their mean and its standard error over seeds
    (``stdev / sqrt(k)``; ``None`` for one seed) and how many runs were clear. A second record of
    the same method and seed (a rerun) is not counted twice: the first by name is used, and the
    others are listed in ``reruns``.
    """
    groups: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    reruns: dict[str, list[str]] = {}
    for r in sorted(records, key=lambda r: str(r.get("name", ""))):
        proto = _protocol(r)
        seed = int((r.get("settings") or {}).get("seed") or 0)
        by_seed = groups.setdefault(proto, {}).setdefault(str(r["algo"]), {})
        if seed in by_seed:
            reruns.setdefault(proto, []).append(str(r.get("name", "")))
            continue
        by_seed[seed] = r
    out = []
    for proto, by_algo in groups.items():
        if len(by_algo) < 2:
            continue
        first = next(iter(next(iter(by_algo.values())).values()))
        rows = []
        for algo in sorted(by_algo):
            runs = [by_algo[algo][s] for s in sorted(by_algo[algo])]
            imps = [improvement(r["before"], r["after"]) for r in runs]
            diffs = [i["diff"] for i in imps]
            k = len(diffs)
            mean = sum(diffs) / k
            se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (k - 1) / k) if k > 1 else None
            rows.append({"algo": algo, "seeds": sorted(by_algo[algo]), "names": [r.get("name", "") for r in runs],
                         "diffs": diffs, "mean": mean, "se": se, "clear": sum(i["clear"] for i in imps)})
        out.append({"env": first["env"], "model": first.get("model"), "steps": first["steps"],
                    "metric": metric(first["before"]), "rows": rows, "reruns": reruns.get(proto, [])})
    return sorted(out, key=lambda c: (str(c["env"]), str(c["model"])))


def comparison_figure_name(comparison: dict[str, Any]) -> str:
    """``methods-<env>.png``, the file name of a comparison's figure (characters other than letters,
    digits, ``-`` and ``.`` become ``-``)."""
    import re

    return "methods-" + re.sub(r"[^A-Za-z0-9.-]+", "-", str(comparison["env"])).strip("-") + ".png"


def render_comparison(comparisons: Sequence[dict[str, Any]]) -> str:
    """The docs table of :func:`method_comparison` (improvements to 3 decimals) and its figures' links."""
    if not comparisons:
        return "No env has records of two or more methods yet.\n"
    lines = ["| env | algo | training seeds | held-out improvement, by seed | mean ± se over seeds | clear runs |",
             "|---|---|---|---|---|---|"]
    for c in comparisons:
        for row in c["rows"]:
            se = "n/a (one seed)" if row["se"] is None else f"{row['se']:.3f}"
            per_seed = ", ".join(f"{d:+.3f}" for d in row["diffs"])
            lines.append(f"| `{c['env']}` | {row['algo']} | {', '.join(map(str, row['seeds']))} | {per_seed} "
                         f"| {row['mean']:+.3f} ± {se} | {row['clear']} of {len(row['diffs'])} |")
    text = "\n".join(lines) + "\n"
    for c in comparisons:
        if c["reruns"]:
            text += (f"\nFor `{c['env']}`, a second run of the same method and seed is not counted again: "
                     f"{', '.join(f'`{n}`' for n in c['reruns'])}.\n")
        name = comparison_figure_name(c)
        text += f"\n![methods on {c['env']}](learning/{name})\n"
    return text


def plot_comparison(comparison: dict[str, Any], path: str | Path) -> Path:
    """Each seed's improvement as a dot, each method's mean with ± 1 standard error over seeds."""
    fig, ax = new_axes((6, 3.6))
    for x, row in enumerate(comparison["rows"]):
        k = len(row["diffs"])
        xs = [x - 0.12 + 0.24 * i / max(k - 1, 1) for i in range(k)]
        ax.scatter(xs, row["diffs"], s=22, alpha=0.7, color="tab:blue",
                   label="one training seed" if x == 0 else None)
        ax.errorbar([x + 0.3], [row["mean"]], yerr=[row["se"] or 0.0], fmt="s", color="tab:red", capsize=5,
                    label="mean ± se over seeds" if x == 0 else None)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(comparison["rows"])))
    ax.set_xticklabels([f"{r['algo']}\n({len(r['diffs'])} seeds)" for r in comparison["rows"]])
    ax.set_ylabel(f"held-out {comparison['metric'].replace('_', ' ')}: after - before")
    title = f"{comparison['env']}, {comparison['steps']} steps ({Path(str(comparison['model'])).name})"
    return save_figure(fig, ax, title, path)


def update_doc(doc: str | Path, record_dir: str | Path, figures: bool = True) -> bool:
    """Replace the block between the learning-records markers of ``doc`` with the rendering of every
    ``<record_dir>/*.json`` and, when ``doc`` has the method-comparison markers, that block with
    :func:`render_comparison` (``figures``: also draw each comparison's figure into ``record_dir``);
    returns whether the file changed."""
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(record_dir).glob("*.json"))]
    changed = replace_block(doc, DOC_BEGIN, DOC_END, render_markdown(records))
    if COMPARE_BEGIN.strip() in Path(doc).read_text(encoding="utf-8"):
        comparisons = method_comparison(records)
        changed = replace_block(doc, COMPARE_BEGIN, COMPARE_END, render_comparison(comparisons)) or changed
        if figures:
            for c in comparisons:
                plot_comparison(c, Path(record_dir) / comparison_figure_name(c))
    return changed


if __name__ == "__main__":  # python -m gem.rl.evaluate docs/rl.md docs/learning
    import sys

    if len(sys.argv) != 3:
        sys.exit("usage: python -m gem.rl.evaluate DOC.md RECORD_DIR")
    changed = update_doc(sys.argv[1], sys.argv[2])
    sys.stdout.write(f"{sys.argv[1]}: {'updated' if changed else 'unchanged'}\n")
