"""Retrieval latency and throughput on a generated 100k-document corpus, BM25 and dense.

    python benchmarks/retrieval.py [--docs 100000] [--queries 1000] [--clients 16] [--dense-docs 20000] [--rounds 2]
    python benchmarks/retrieval.py --dense-index DIR   # dense over an index of the same corpus built beforehand

Steps, all against the same corpus (the fictional world of ``qa:FictionalSearch``, scaled up):

1. build the BM25 index (bm25s) and time it;
2. search in-process: queries/s for one query at a time and for batches of 64;
3. serve it (``retrieval_server`` in a child process) and send requests from ``--clients`` threads
   with batching on (``max_batch_size`` 64) and off (``max_batch_size`` 1, the baseline), alternated
   ``--rounds`` times (best run of each kept), plus one client alone; latency p50/p95 in ms per
   request and queries/s;
4. dense (all-MiniLM-L6-v2 + faiss, CPU, ``--threads`` torch threads, default 1): encode ``--dense-docs`` documents (time and docs/s, with
   the 100k extrapolation when fewer), then the same HTTP measurements over that index. Encoding
   100k documents takes about 15-30 minutes on 2 CPU cores, so the full-size dense index is built
   once with the build command (``--write-corpus`` writes the generated corpus) and passed as
   ``--dense-index``; its build time is read from the index's ``meta.json``.

Queries are entity names, as the scripted agent sends them. Ratios are batched / unbatched.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from gem.envs.qa_search.world import World
from gem.services.search.corpus import write_corpus
from gem.services.search.launch import start_server_process
from gem.services.search.retrievers import DOCS_FILE, build_index, read_meta

SERVER = "gem.services.search.retrieval_server"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def world_for(docs: int, seed: int = 0) -> World:
    """A world of about ``docs`` documents (60% people, 15% towns, 25% companies)."""
    people, towns = int(docs * 0.6), max(1, int(docs * 0.15))
    return World(seed, people, towns, docs - people - towns)


def http_load(url: str, queries: list[str], clients: int, topk: int = 3) -> dict[str, float]:
    """Send each query as its own request from ``clients`` threads; latency per request and qps."""
    local = __import__("threading").local()

    def one(query: str) -> float:
        session = getattr(local, "s", None) or requests.Session()
        local.s = session
        start = time.perf_counter()
        response = session.post(url, json={"queries": [query], "topk": topk}, timeout=120)
        response.raise_for_status()
        return (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(one, queries))
    wall = time.perf_counter() - start
    return {
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        "qps": round(len(queries) / wall, 1),
    }


def measure_mode(index: Path, queries: list[str], clients: int, batch_size: int, extra: tuple[str, ...]) -> dict:
    """One server run: ``clients`` threads (and, when batching, one client alone)."""
    args = ["--index_path", str(index), "--max_batch_size", str(batch_size), "--max_wait_ms", "2", *extra]
    out = {}
    with start_server_process(SERVER, args, timeout=600) as server:
        http_load(server.url, queries[:50], clients)  # warm up
        before = server.health()
        out["many"] = http_load(server.url, queries, clients)
        after = server.health()
        out["many"]["mean_batch"] = round((after["queries"] - before["queries"]) / (after["batches"] - before["batches"]), 2)
        if batch_size > 1:
            out["one"] = http_load(server.url, queries[: max(50, len(queries) // 4)], 1)
    return out


def serve_and_measure(
    index: Path, queries: list[str], clients: int, label: str, rounds: int, extra: tuple[str, ...] = ()
) -> dict[str, dict]:
    """Batched (64) and unbatched (1) servers, alternated for ``rounds``; each keeps its best-qps run.

    Alternating and best-of make the comparison fair on a machine whose load changes.
    """
    best: dict[int, dict] = {}
    for _ in range(rounds):
        for batch_size in (64, 1):
            run = measure_mode(index, queries, clients, batch_size, extra)
            if batch_size not in best or run["many"]["qps"] > best[batch_size]["many"]["qps"]:
                best[batch_size] = run
    results = {
        f"{clients} clients, batched": best[64]["many"],
        f"{clients} clients, unbatched": best[1]["many"],
        "1 client": best[64]["one"],
        "ratio batched/unbatched qps": round(best[64]["many"]["qps"] / best[1]["many"]["qps"], 2),
    }
    for key, value in results.items():
        print(f"  {label} HTTP {key}: {value}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--dense-docs", type=int, default=20_000, help="0 skips dense")
    parser.add_argument("--threads", type=int, default=1, help="dense: torch/faiss threads (0: library default)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of batched/unbatched servers")
    parser.add_argument("--dense-index", type=Path, help="a dense index of this generated corpus, built beforehand")
    parser.add_argument("--write-corpus", type=Path, help="write the generated corpus (JSONL) here and exit")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.write_corpus:
        write_corpus(world_for(args.docs).documents(), args.write_corpus)
        print(f"wrote {args.docs} documents to {args.write_corpus}; build the dense index with\n"
              f"  python -m gem.services.search.build_index --corpus_path {args.write_corpus} "
              "--index_path DIR --backend dense")
        return

    report: dict[str, object] = {"docs": args.docs}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        world = world_for(args.docs)
        docs = world.documents()
        write_corpus(docs, tmp / "corpus.jsonl")
        print(f"corpus: {len(docs)} documents generated in {time.perf_counter() - start:.1f} s", flush=True)
        rng = random.Random(0)
        queries = [rng.choice(docs)["title"] for _ in range(args.queries)]

        start = time.perf_counter()
        bm25 = build_index(tmp / "corpus.jsonl", tmp / "bm25")
        report["bm25_build_s"] = round(time.perf_counter() - start, 2)
        print(f"BM25 index built and saved in {report['bm25_build_s']} s", flush=True)
        inproc = {}
        for batch in (1, 64):
            sample = queries[: 200 if batch == 1 else 640]
            start = time.perf_counter()
            hits = [h for i in range(0, len(sample), batch) for h in bm25.search(sample[i : i + batch], 3)]
            inproc[f"batch {batch} qps"] = round(len(sample) / (time.perf_counter() - start), 1)
            recall = sum(bm25.docs[h[0][0]]["title"] == q for h, q in zip(hits, sample) if h) / len(sample)
        inproc["top1 is the named entity"] = round(recall, 4)
        report["bm25_in_process"] = inproc
        print(f"  BM25 in-process: {inproc}", flush=True)
        del bm25
        report["bm25_http"] = serve_and_measure(tmp / "bm25", queries, args.clients, "BM25", args.rounds)

        threads = args.threads or None  # dense: torch/faiss threads here and in the server
        extra = ("--threads", str(threads)) if threads else ()
        if args.dense_index:
            meta = read_meta(args.dense_index)
            with (args.dense_index / DOCS_FILE).open(encoding="utf-8") as handle:
                indexed = [json.loads(line)["title"] for line in handle]
            if meta.get("backend") != "dense" or indexed != [d["title"] for d in docs]:
                sys.exit(f"{args.dense_index} is not a dense index of this corpus (--docs {args.docs}); "
                         "write it with --write-corpus and index it with build_index --backend dense")
            report["dense_build"] = {
                "docs": len(indexed),
                "build_total_s": meta["build_seconds"],
                "docs_per_s": round(len(indexed) / meta["build_seconds"], 1),
                "model": meta.get("model"),
            }
            print(f"  dense index (built beforehand): {report['dense_build']}", flush=True)
            dense_queries = [rng.choice(indexed) for _ in range(args.queries)]
            report["dense_http"] = serve_and_measure(args.dense_index, dense_queries, args.clients, "dense", args.rounds, extra)
        elif args.dense_docs:
            try:
                import faiss  # noqa: F401
                import sentence_transformers  # noqa: F401
            except ImportError:
                print('dense skipped: pip install -e ".[search]" in the GEM checkout')
            else:
                if threads:
                    from gem.services.search.retrievers import set_threads

                    set_threads(threads)
                n = min(args.dense_docs, len(docs))
                write_corpus(docs[:: max(1, len(docs) // n)][:n], tmp / "dense_corpus.jsonl")
                start = time.perf_counter()
                dense = build_index(tmp / "dense_corpus.jsonl", tmp / "dense", backend="dense")
                total = time.perf_counter() - start
                rate = n / dense.encode_seconds
                report["dense_build"] = {
                    "docs": n,
                    "encode_s": round(dense.encode_seconds, 1),
                    "build_total_s": round(total, 1),
                    "docs_per_s": round(rate, 1),
                    "estimated_100k_encode_s": round(100_000 / rate, 0),
                }
                print(f"  dense build: {report['dense_build']}", flush=True)
                dense_queries = [rng.choice(dense.docs)["title"] for _ in range(args.queries)]
                del dense
                report["dense_http"] = serve_and_measure(tmp / "dense", dense_queries, args.clients, "dense", args.rounds, extra)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
