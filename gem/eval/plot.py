"""``gem plot DIR``: PNG charts of a ``gem eval`` output directory (matplotlib, Agg, no display).

Writes ``success.png`` (success rate over every episode and pass@k per env, with the count of
episodes not scored), ``rewards.png`` (the
distribution of episode returns per env) and ``turns.png`` (mean turns and tool calls per env).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

from gem.eval.summary import summarize_dir

logger = logging.getLogger(__name__)

PLOT_FILES = ("success.png", "rewards.png", "turns.png")


def _figure(n_envs: int) -> Any:
    try:
        from matplotlib.figure import Figure  # Figure + savefig renders with Agg: no GUI, no pyplot state
    except ImportError as exc:
        from gem.errors import missing_extra

        raise missing_extra("gem plot", "eval", "matplotlib") from exc
    return Figure(figsize=(max(6.0, 1.2 * n_envs + 3), 4.5), dpi=100)


def success_notes(out: str | Path, summary: Optional[dict[str, Any]] = None) -> dict[str, str]:
    """The label over each env's success bar, from :func:`summarize_dir`: ``"3/10 solved"`` (out of
    every episode), and ``"2 not scored"`` on a second line (errors, infrastructure failures and
    ungraded answers, which count as not solved)."""
    summary = summary if summary is not None else summarize_dir(out)
    notes = {}
    for env, s in summary["envs"].items():
        notes[env] = f"{s['solved']}/{s['episodes']} solved" + (f"\n{s['unscored']} not scored" if s["unscored"] else "")
    return notes


def plot_dir(out: str | Path, to: Optional[str | Path] = None) -> list[Path]:
    """Write the charts of ``out`` into ``to`` (default ``out/plots``); return their paths."""
    out = Path(out)
    if not (out / "episodes.jsonl").exists():
        raise ValueError(f"{out} has no episodes.jsonl; give the --out directory of a gem eval run.")
    summary = summarize_dir(out)
    for problem in summary["problems"]:
        logger.warning("gem plot: %s", problem)
    envs = list(summary["envs"])
    if not envs:
        raise ValueError(f"{out}/episodes.jsonl holds no episodes yet.")
    target = Path(to) if to is not None else out / "plots"
    target.mkdir(parents=True, exist_ok=True)
    labels = [e if len(e) <= 28 else e[:26] + ".." for e in envs]
    xs = list(range(len(envs)))
    paths = []

    # success rate and pass@k
    fig = _figure(len(envs))
    ax = fig.add_subplot()
    ks = sorted(
        {k for s in summary["envs"].values() for k in s if k.startswith("pass@") and k != "pass@1"},
        key=lambda k: int(k[5:]),
    )
    series = [("success rate", "success_rate")] + [(k, k) for k in ks]
    notes = success_notes(out, summary)
    width = 0.8 / len(series)
    for j, (name, key) in enumerate(series):
        values = [summary["envs"][e].get(key) or 0.0 for e in envs]
        bars = ax.bar([x + (j - (len(series) - 1) / 2) * width for x in xs], values, width, label=name)
        if j == 0:
            for bar, env in zip(bars, envs):
                ax.annotate(
                    notes[env],
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=8,
                )
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("share of episodes solved")
    ax.set_xticks(xs, labels, rotation=20, ha="right", fontsize=8)
    ax.set_title("Success per env")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(target / PLOT_FILES[0])
    fig.savefig(paths[-1])

    # reward distributions
    fig = _figure(len(envs))
    ax = fig.add_subplot()
    data = [summary["envs"][e]["rewards"] or [0.0] for e in envs]
    ax.boxplot(data, showmeans=True)
    for i, values in enumerate(data, 1):
        ax.scatter([i] * len(values), values, s=8, alpha=0.4)
    ax.set_xticks([i + 1 for i in xs], labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("episode return")
    ax.set_title("Reward distribution per env")
    fig.tight_layout()
    paths.append(target / PLOT_FILES[1])
    fig.savefig(paths[-1])

    # turns and tool calls
    fig = _figure(len(envs))
    ax = fig.add_subplot()
    turns = [summary["envs"][e]["mean_turns"] or 0.0 for e in envs]
    tools = [summary["envs"][e]["mean_tool_calls"] or 0.0 for e in envs]
    ax.bar([x - 0.2 for x in xs], turns, 0.4, label="mean turns")
    ax.bar([x + 0.2 for x in xs], tools, 0.4, label="mean tool calls")
    ax.set_xticks(xs, labels, rotation=20, ha="right", fontsize=8)
    ax.set_title("Turns and tool calls per env")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(target / PLOT_FILES[2])
    fig.savefig(paths[-1])
    logger.info("wrote %s", ", ".join(map(str, paths)))
    return paths
