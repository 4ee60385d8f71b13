"""A learning record's model, served for real: llama.cpp serves it and ``gem eval`` plays it.

    python -m gem.rl.served docs/learning/smollm2-guess-easy-rebn.json --doc docs/rl.md

For a record written by :mod:`gem.rl.learn` (its run directory still in place):

1. the trained checkpoint (``<output-dir>/final``) becomes a GGUF file (:func:`gem.rl.export.export_gguf`,
   with the GGUF the run started from as the template);
2. ``python -m llama_cpp.server`` serves the base GGUF, then the trained one
   (:func:`gem.eval.llama_server.llama_server`: 127.0.0.1, a free port, one thread);
3. ``gem eval`` (the OpenAI-compatible agent) plays the record's env on the same held-out seeds
   (from 1,000,000,000), with the record's decoding (temperature, reply length, turn cap), against
   each server;
4. the record gets ``served``: ``before`` and ``after`` in the record's own format (success rate or
   mean return, standard error, n), the ``gem eval`` command, the server and the harness, and
   ``--doc`` regenerates the docs table.

The harness differs from :func:`gem.rl.evaluate.evaluate` in two ways a user of a served model
meets too: ``gem eval`` sends the whole conversation each turn (the trainer's policy saw each turn's
observation alone), and llama.cpp computes with the quantized weights and samples with its own
random numbers. So the served figures are compared with each other (before against after), not
with the trainer's.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger("gem.rl.served")


def run_args(record: dict[str, Any]) -> argparse.Namespace:
    """The ``gem.rl.learn`` arguments the record was made with (parsed from its ``command``)."""
    from gem.rl.learn import build_parser

    words = shlex.split(record["command"])
    if words[:3] != ["python", "-m", "gem.rl.learn"]:
        raise ValueError(f"the record's command is not a gem.rl.learn command: {record['command']!r}")
    return build_parser().parse_args(words[3:])


def served_summary(out: Path) -> dict[str, Any]:
    """``gem eval``'s episodes as a record side: :func:`gem.rl.evaluate.summarize` over them (an
    episode that errored counts with return 0 and as a failure, as in ``gem eval``'s rates)."""
    from gem.eval.records import latest_records, read_episodes
    from gem.rl.evaluate import summarize

    rows = list(latest_records(read_episodes(out)).values())
    returns = [float(r["total_reward"]) if r["status"] == "ok" else 0.0 for r in rows]
    successes = [bool(r["success"]) if r["status"] == "ok" else False for r in rows]
    out = summarize(returns, successes)
    out["errors"] = sum(r["status"] != "ok" for r in rows)
    return out


def served_eval(
    record_path: str | Path,
    *,
    work_dir: str | Path | None = None,
    episodes: int | None = None,
    concurrency: int = 4,
    doc: str | Path | None = None,
) -> dict[str, Any]:
    """Export, serve and evaluate the record's model before and after training; returns the record
    with ``served`` added (also written back to ``record_path``)."""
    from gem.eval.llama_server import llama_server
    from gem.eval.runner import EvalConfig, EvalRunner
    from gem.rl.evaluate import EVAL_SEED_BASE, update_doc, write_record
    from gem.rl.export import export_gguf
    from gem.rl.models import smollm2_gguf

    record_path = Path(record_path)
    record = json.loads(record_path.read_text(encoding="utf-8"))
    args = run_args(record)
    base = Path(args.model) if args.model else smollm2_gguf()
    if base is None or base.suffix != ".gguf" or not base.is_file():
        raise SystemExit(f"gem.rl.served needs the GGUF the run started from; the record's model is {args.model!r}.")
    final = Path(args.output_dir) / "final"
    if not (final / "config.json").is_file():
        raise SystemExit(f"{final} has no trained checkpoint: run the record's command first.")
    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="gem-served-"))
    work.mkdir(parents=True, exist_ok=True)
    trained = work / "trained.gguf"
    exported = export_gguf(final, base, trained)
    logger.info("exported %s: %d tensors changed", trained, len(exported["changed"]))
    n = episodes or int(record["eval"]["episodes"])
    sampled = str(record["eval"].get("decoding", "")).startswith("sampled")
    temperature = args.temperature if sampled else 0.0
    # What `gem eval` runs (the same engine, EvalRunner), with the record's decoding.
    options = dict(env_ids=[args.env], agent="openai", episodes=n, seed=EVAL_SEED_BASE, temperature=temperature,
                   max_tokens=args.max_new_tokens, max_turns=args.max_turns, concurrency=concurrency, progress=False)
    command = [
        "eval", args.env, "--agent", "openai", "--episodes", str(n), "--seed", str(EVAL_SEED_BASE),
        "--temperature", str(temperature), "--max-tokens", str(args.max_new_tokens),
        "--max-turns", str(args.max_turns), "--concurrency", str(concurrency),
    ]  # fmt: skip
    served: dict[str, Any] = {}
    for side, gguf in (("before", base), ("after", trained)):
        out = work / side
        with llama_server(gguf, model_name="policy") as server:
            runner = EvalRunner(EvalConfig(out=str(out), model=server.model, base_url=server.base_url, **options))
            runner.run()
        if runner.ran and runner.failed == runner.ran:
            raise SystemExit(f"gem eval against the {side} model scored no episode; see {out}/episodes.jsonl.")
        served[side] = served_summary(out)
        logger.info("served %s: %s", side, served[side])
    import llama_cpp

    record["served"] = {
        **served,
        "command": "gem " + " ".join(shlex.quote(c) for c in command)
        + " --base-url <server>/v1 --model policy --out <dir>",
        "server": f"python -m llama_cpp.server (llama-cpp-python {llama_cpp.__version__}), one thread",
        "exported_tensors": len(exported["changed"]),
        "harness": "gem eval: the whole conversation each turn; llama.cpp's quantized weights and sampler",
    }
    record.pop("improvement", None)  # (recomputed by write_record)
    write_record(record_path, record)
    if doc:
        update_doc(doc, record_path.parent)
    return record


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gem.rl.served", description=__doc__.split("\n")[0])
    p.add_argument("record", help="a record written by gem.rl.learn (docs/learning/<name>.json)")
    p.add_argument("--work-dir", default=None, help="where the GGUF and gem eval's runs go (default: a new temp dir)")
    p.add_argument("--episodes", type=int, default=None, help="held-out episodes (default: the record's)")
    p.add_argument("--concurrency", type=int, default=4, help="gem eval's episodes in flight")
    p.add_argument("--doc", default=None, help="also regenerate this markdown file's learning-records block")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    record = served_eval(args.record, work_dir=args.work_dir, episodes=args.episodes,
                         concurrency=args.concurrency, doc=args.doc)
    served = record["served"]
    key = "success_rate" if "success_rate" in served["before"] else "mean_return"
    sys.stdout.write(
        f"gem.rl.served: {key} {served['before'][key]:.3f} ± {served['before']['se']:.3f} -> "
        f"{served['after'][key]:.3f} ± {served['after']['se']:.3f} (n={served['after']['n']}), in {args.record}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
