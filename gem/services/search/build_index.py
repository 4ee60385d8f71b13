"""Build a search index from a JSONL corpus (``id``, ``title``, ``text`` per line).

    python -m gem.services.search.build_index --corpus_path corpus.jsonl --index_path idx/ [--backend dense]

The index directory is what ``retrieval_server --index_path`` serves.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Optional, Sequence

from gem.services.search.retrievers import BACKENDS, build_index


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gem.services.search.build_index", description=__doc__.split("\n")[0])
    parser.add_argument("--corpus_path", required=True, help="JSONL corpus: id, title, text per line")
    parser.add_argument("--index_path", required=True, help="directory to write the index into")
    parser.add_argument("--backend", choices=BACKENDS, default="bm25", help="bm25 (default) or dense")
    parser.add_argument(
        "--model", help="dense: a sentence-transformers model name or local path (default all-MiniLM-L6-v2)"
    )
    parser.add_argument("--device", default="cpu", help="dense: torch device (default cpu)")
    parser.add_argument("--threads", type=int, help="dense: torch/faiss CPU threads (default: theirs)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    start = time.perf_counter()
    if args.threads is not None and args.backend == "dense":
        from gem.services.search.retrievers import set_threads

        set_threads(args.threads)
    try:
        retriever = build_index(
            args.corpus_path, args.index_path, args.backend, args.model, args.device, show_progress=not args.quiet
        )
    except (FileNotFoundError, ValueError) as exc:
        sys.exit(f"build_index: {exc}")
    summary = {**retriever.meta(), "index_path": args.index_path, "seconds": round(time.perf_counter() - start, 2)}
    sys.stdout.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
