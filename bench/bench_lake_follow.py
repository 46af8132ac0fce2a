"""A long-lived reader on a 100k-chunk index, file backend against lake: warm query p50/p95, and the refresh after
another process rewrites one file (the reader's first query after that commit, against its warm queries).

    python bench/bench_lake_follow.py --file DIR --lake-home DIR --catalog URL --data DIR --root DIR [--rounds 5]

`--file` is a DB_PATH folder holding a copy of the 100k index (it is written to: use a copy), `--catalog`/`--data` a
lake holding the same rows (`minirag-mcp copy --from` that folder), `--root` a writable folder for the one file the
writer changes; MODEL_NAME and CACHE_DIR as for the index. Both readers live in this process (paired: the queries
alternate between them); the writer is the CLI in another process, as on another machine. Timings are printed,
never asserted; run it inside the bench lock.
"""

import argparse, json, os, statistics, subprocess, sys, time
from pathlib import Path

QUERIES = [
    "how to open a file for reading",
    "memory usage of the process",
    "parse command line arguments",
    "regular expression groups",
    "thread safety of the logging module",
    "convert a string to bytes",
    "sort a list by a key function",
    "read environment variables",
    "socket timeout on connect",
    "json decode error",
    "format dates and times",
    "iterate over dictionary items",
    "raise a custom exception",
    "context manager protocol",
    "unit test assertions",
    "random numbers with a seed",
    "path of the current working directory",
    "subprocess output capture",
    "compress data with gzip",
    "decimal rounding modes",
    "email message attachments",
    "hash a password securely",
    "weak references and garbage collection",
    "asynchronous tasks and event loop",
    "copy a directory tree",
    "encode urls and query strings",
    "class attributes and inheritance",
    "profiling slow code",
    "tracemalloc snapshots",
    "signal handlers",
]


def env_of(args, lake: bool, home: str | None = None) -> dict:
    e = dict(
        os.environ,
        BASE_DIRS=json.dumps([str(args.corpus_root), str(args.root)]),
        MODEL_NAME=os.environ["MODEL_NAME"],
        CACHE_DIR=os.environ["CACHE_DIR"],
        DB_PATH=str(home or (args.lake_home if lake else args.file)),
    )
    e.pop("BASE_DIR", None)
    if lake:
        e.update(MINIRAG_CATALOG=args.catalog, MINIRAG_DATA=str(args.data))
    return e


def write_file(root: Path, i: int) -> Path:
    p = root / "changed.md"
    paras = "\n\n".join(
        f"Round {i}, part {j}: the quartermaster logs item {i * 10 + j} in the ledger." for j in range(6)
    )
    p.write_text(f"# Ledger {i}\n\n{paras}\n", encoding="utf-8")
    return p


def ingest(env: dict, path: Path) -> float:
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "minirag.cli", "ingest", str(path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode:
        raise SystemExit(r.stderr)
    return time.perf_counter() - t


def timed(ix, q: str) -> float:
    t = time.perf_counter()
    ix.query(q, top_k=10)
    return time.perf_counter() - t


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--lake-home", type=Path, required=True)
    ap.add_argument("--catalog", required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--corpus-root", type=Path, required=True, help="the index's root")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--passes", type=int, default=2, help="times each query runs on each backend")
    args = ap.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    from minirag import tuning

    tuning.apply("server")  # a long-lived reader: it holds the vectors and postings
    from minirag.api import Index

    ix = {
        name: Index.open(env=env_of(args, name == "lake"), idle_close=30) for name in ("file", "lake")
    }  # idle_close: the file reader lets a writer in when it waits
    t = {}
    for name, i in ix.items():
        a = time.perf_counter()
        i.query(QUERIES[0], top_k=10)
        t[f"{name}_first_query_s"] = round(time.perf_counter() - a, 2)
        t[f"{name}_chunks"] = i.status().chunk_count
    print(json.dumps(t), flush=True)
    warm = {"file": [], "lake": []}
    for _ in range(args.passes):
        for q in QUERIES:  # paired: each query on one backend, then on the other
            for name in ("file", "lake") if len(warm["file"]) % 2 == 0 else ("lake", "file"):
                warm[name].append(timed(ix[name], q))
    out = {}
    for name, xs in warm.items():
        out[f"{name}_warm_p50_ms"] = round(statistics.median(xs) * 1000, 1)
        out[f"{name}_warm_p95_ms"] = round(pct(xs, 95) * 1000, 1)
    out["lake_over_file_p50"] = round(out["lake_warm_p50_ms"] / out["file_warm_p50_ms"], 2)
    print(json.dumps(dict(queries=len(warm["file"]), **out)), flush=True)
    after = {"file": [], "lake": []}
    base = {"file": [], "lake": []}
    for r in range(args.rounds):
        for name in ("file", "lake") if r % 2 == 0 else ("lake", "file"):
            path = write_file(args.root, r * 2 + (name == "lake"))
            if name == "file":
                ix["file"].close()  # the writer is another process: the file is one writer's at a time
            ingest(env_of(args, name == "lake", None if name == "file" else str(args.lake_home) + "-writer"), path)
            q = QUERIES[(r * 3 + 1) % len(QUERIES)]
            after[name].append(timed(ix[name], f"quartermaster ledger {q}"))
            base[name].append(min(timed(ix[name], f"quartermaster ledger {q}") for _ in range(3)))
    res = {}
    for name in ("file", "lake"):
        res[f"{name}_after_commit_ms"] = round(statistics.median(after[name]) * 1000, 1)
        res[f"{name}_same_query_warm_ms"] = round(statistics.median(base[name]) * 1000, 1)
        res[f"{name}_refresh_ms"] = round(statistics.median([a - b for a, b in zip(after[name], base[name])]) * 1000, 1)
    print(json.dumps(dict(rounds=args.rounds, **res)), flush=True)
    for i in ix.values():
        i.close()


if __name__ == "__main__":
    main()
