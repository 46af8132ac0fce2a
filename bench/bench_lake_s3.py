"""The same documents in three indexes: the index file, a lake with its data in a local folder (a shared folder's
stand-in), and a lake with its data under a prefix on an S3-compatible server (moto's, on loopback: tests/s3.py);
both lakes' catalogs in one PostgreSQL (tests/pg.py). Each round syncs the files into a fresh index of each kind, the
order rotating round by round; then warm query p50/p95 of three long-lived readers in this process, each query asked
of all three in a rotating order.

    python bench/bench_lake_s3.py [--set pyfaq-en] [--docs 300] [--rounds 2] [--queries 60] [--out FILE]

`--set` names an eval set (bench/evaldir.py): its first `--docs` documents become Markdown files, and its queries are
asked. Loopback hides the network's latency: what is measured is the cost of going through httpfs and an S3 server
rather than the file system. Printed, never asserted; run it inside the bench lock.
"""

import argparse, json, os, statistics, subprocess, sys, tempfile, time, uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lake import corpus_files  # noqa: E402
from evaldir import checked, default_eval_dir  # noqa: E402
from pg import Postgres  # noqa: E402
from s3 import S3  # noqa: E402

KINDS = ("file", "folder", "s3")


def sync(env: dict) -> float:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "minirag.cli", "sync", "--json"], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    return time.perf_counter() - t


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def rotated(i: int) -> tuple:
    return KINDS[i % 3 :] + KINDS[: i % 3]


def lake_env(kind: str, pg: Postgres, s3: S3, work: Path, r: int) -> dict:
    "The variables of a fresh index of `kind`: none for the file, a catalog and a folder or a bucket's prefix."
    if kind == "file":
        return {}
    bucket = "b" + uuid.uuid4().hex[:10]
    data = f"s3://{bucket}/team/minirag/" if kind == "s3" else str(work / f"data-{r}")
    return dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=data, **s3.env(bucket))


def queries(readers: dict, qs: list[str], n: int) -> dict:
    "Warm p50/p95 per kind: the first pass over `qs` loads the vectors and is not counted."
    times = {k: [] for k in readers}
    for i in range(n + len(qs[:5])):
        for k in rotated(i):
            t = time.perf_counter()
            readers[k].query(qs[i % len(qs)])
            if i >= len(qs[:5]):
                times[k].append(time.perf_counter() - t)
    out = {}
    for k, xs in times.items():
        out[f"{k}_query_p50_ms"] = round(statistics.median(xs) * 1000, 1)
        out[f"{k}_query_p95_ms"] = round(pct(xs, 0.95) * 1000, 1)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="pyfaq-en")
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    from minirag.embed import packaged_model_dir

    set_dir = checked(default_eval_dir() / args.set)
    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    docs = work / "docs"
    n = corpus_files(set_dir, docs, args.docs)
    qs = [json.loads(l)["text"] for l in (set_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    model = packaged_model_dir(work / "models")
    base = dict(os.environ, BASE_DIR=str(docs), MODEL_NAME=str(model), CACHE_DIR=str(model.parent))
    out = dict(set=args.set, files=n, rounds=args.rounds, **{f"{k}_sync_s": [] for k in KINDS})
    with Postgres() as pg, S3() as s3:
        envs = {}
        for r in range(args.rounds):
            for kind in rotated(r):
                env = dict(base, DB_PATH=str(work / f"{kind}-{r}"), **lake_env(kind, pg, s3, work, r))
                out[f"{kind}_sync_s"].append(round(sync(env), 1))
                print(f"round {r}: {kind} sync {out[f'{kind}_sync_s'][-1]} s", file=sys.stderr, flush=True)
                envs[kind] = env
        os.environ.update({k: v for k, v in envs["s3"].items() if k.startswith("AWS_")})
        from minirag.api import Index

        home = {k: (e["DB_PATH"] if k == "file" else str(work / f"reader-{k}")) for k, e in envs.items()}
        readers = {k: Index.open(env=dict(e, DB_PATH=home[k])) for k, e in envs.items()}
        out["chunks"] = readers["s3"].status().chunk_count
        out["sources"] = readers["s3"].status().source_count
        out.update(queries(readers, qs, args.queries))
        for ix in readers.values():
            ix.close()
    print(json.dumps(out, indent=1))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
