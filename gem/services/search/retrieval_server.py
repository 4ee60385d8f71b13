"""Serve a local corpus over ``POST /retrieve`` (BM25 by default, or dense embeddings).

    python -m gem.services.search.build_index --corpus_path corpus.jsonl --index_path idx/
    python -m gem.services.search.retrieval_server --index_path idx/ --port 8000

or in one step (the index is built in memory, and saved if ``--index_path`` is given)::

    python -m gem.services.search.retrieval_server --corpus_path corpus.jsonl

Then ``SearchTool(search_url="http://127.0.0.1:8000/retrieve")``. Request and response formats
are described in :mod:`gem.services.search.service`.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any, Optional, Sequence

from gem.errors import GemError
from gem.services.search.corpus import load_corpus
from gem.services.search.retrievers import (
    BACKENDS,
    META_FILE,
    Retriever,
    build_index,
    build_retriever,
    load_retriever,
)
from gem.services.search.service import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_TOPK,
    DEFAULT_MAX_WAIT_MS,
    DEFAULT_TOPK,
    add_server_arguments,
    app_options,
    create_app,
    run_server,
)

logger = logging.getLogger(__name__)


def retriever_search_fn(retriever: Retriever):
    """The batch search function the service calls: hit indices turned into documents."""
    docs = retriever.docs

    def search(queries: Sequence[str], topk: int):
        return [[(docs[i], score) for i, score in hits] for hits in retriever.search(queries, topk)]

    return search


def create_retrieval_app(
    retriever: Retriever,
    default_topk: int = DEFAULT_TOPK,
    max_topk: int = DEFAULT_MAX_TOPK,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
    **limits: Any,
) -> Any:
    """The FastAPI app serving ``retriever``; ``limits`` go to :func:`service.create_app`
    (``max_batch_chars``, ``request_timeout``, ``allow_origins``, ``limits``)."""
    return create_app(
        retriever_search_fn(retriever),
        backend=retriever.backend,
        default_topk=default_topk,
        max_topk=max_topk,
        max_batch_size=max_batch_size,
        max_wait_ms=max_wait_ms,
        info={"num_docs": len(retriever.docs)},
        **limits,
    )


def open_retriever(
    index_path: Optional[str], corpus_path: Optional[str], backend: str = "bm25", model: Optional[str] = None
) -> Retriever:
    """Load the index at ``index_path``; or index ``corpus_path`` (saving to ``index_path`` if given)."""
    if index_path and (Path(index_path) / META_FILE).is_file():
        return load_retriever(index_path, model=model)
    if not corpus_path:
        raise SystemExit(
            f"No index at {index_path!r} and no --corpus_path to build one from; pass --corpus_path CORPUS.jsonl."
            if index_path
            else "Pass --index_path (an index built by build_index) or --corpus_path (a JSONL corpus)."
        )
    if index_path:
        return build_index(corpus_path, index_path, backend=backend, model=model)
    return build_retriever(load_corpus(corpus_path), backend=backend, model=model)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gem.services.search.retrieval_server",
        description="Serve a local JSONL corpus for SearchTool (POST /retrieve).",
    )
    parser.add_argument("--index_path", help="index directory from build_index (built here if missing)")
    parser.add_argument("--corpus_path", help="JSONL corpus with id, title, text (to build the index)")
    parser.add_argument("--backend", choices=BACKENDS, default=None, help="bm25 (default) or dense")
    parser.add_argument("--retriever_name", help="GEM's name for the backend: 'bm25', or a dense model name")
    parser.add_argument("--model", "--retriever_model", dest="model", help="dense: model name or local path")
    parser.add_argument("--threads", type=int, help="dense: torch/faiss CPU threads (default: theirs)")
    add_server_arguments(parser)
    parser.add_argument("--faiss_gpu", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    backend = args.backend or (
        "bm25" if args.retriever_name in (None, "bm25") else "dense"
    )
    if args.threads is not None:
        from gem.services.search.retrievers import set_threads

        set_threads(args.threads)
    try:
        retriever = open_retriever(args.index_path, args.corpus_path, backend, args.model)
    except (GemError, FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"retrieval_server: {exc}") from exc
    run_server(create_retrieval_app(retriever, **app_options(args)), args.host, args.port, args.log_level)


if __name__ == "__main__":
    main()
