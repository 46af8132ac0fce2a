"""The same lake with its data in a local folder and on an S3-compatible server (moto's, on loopback: tests/s3.py),
its catalog in one PostgreSQL (tests/pg.py): a sync of the same files into each, paired (the order alternates each
round), then warm query p50/p95 of two long-lived readers in this process, the queries alternating between them.

    MODEL_NAME=... CACHE_DIR=... python bench/bench_lake_s3.py --docs DIR [--rounds 2] [--queries 40]

`--docs` is a folder of documents (its files are synced, never written). Loopback hides the network's latency: what
is measured is the cost of going through httpfs and an S3 server rather than the file system. Printed, never
asserted; run it inside the bench lock.
"""

import argparse, json, os, statistics, subprocess, sys, tempfile, time, uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pg import Postgres  # noqa: E402
from s3 import S3  # noqa: E402

QUERIES = ["install the package", "error message", "configuration file", "network timeout", "user permissions"]


def sync(env: dict) -> float:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "minirag.cli", "sync", "--json"], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    return time.perf_counter() - t


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    out = dict(folder_sync_s=[], s3_sync_s=[])
    with Postgres() as pg, S3() as s3:
        envs = {}
        for r in range(args.rounds):
            for kind in ("folder", "s3") if r % 2 == 0 else ("s3", "folder"):
                bucket = "b" + uuid.uuid4().hex[:10]
                data = f"s3://{bucket}/" if kind == "s3" else str(work / f"data-{r}")
                lake = dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=data, **s3.env(bucket))
                env = dict(os.environ, BASE_DIR=str(args.docs), DB_PATH=str(work / f"{kind}-{r}"), **lake)
                out[f"{kind}_sync_s"].append(round(sync(env), 1))
                print(f"round {r}: {kind} sync {out[f'{kind}_sync_s'][-1]} s", file=sys.stderr, flush=True)
                envs[kind] = env
        os.environ.update({k: v for k, v in envs["s3"].items() if k.startswith("AWS_")})
        from minirag.api import Index

        readers = {k: Index.open(env=dict(e, DB_PATH=str(work / f"reader-{k}"))) for k, e in envs.items()}
        times = {k: [] for k in readers}
        for i in range(args.queries + len(QUERIES)):
            for k in ("folder", "s3") if i % 2 == 0 else ("s3", "folder"):
                t = time.perf_counter()
                readers[k].query(QUERIES[i % len(QUERIES)])
                if i >= len(QUERIES):  # the first pass loads the vectors: not a warm query
                    times[k].append(time.perf_counter() - t)
        for k, xs in times.items():
            out[f"{k}_query_p50_ms"] = round(statistics.median(xs) * 1000, 1)
            out[f"{k}_query_p95_ms"] = round(pct(xs, 0.95) * 1000, 1)
        out["files"] = readers["s3"].status().source_count
        for ix in readers.values():
            ix.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
