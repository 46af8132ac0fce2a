"""The same documents in three indexes: the index file, a lake with its data in a local folder (a shared folder's
stand-in), and a lake with its data under a prefix on an S3-compatible server (moto's, on loopback: tests/s3.py);
both lakes' catalogs in one PostgreSQL (tests/pg.py). Each round syncs the files into a fresh index of each kind, the
order rotating round by round; then warm query p50/p95 of three long-lived readers in this process, each query asked
of all three in a rotating order.

    python bench/bench_lake_s3.py [--set pyfaq-en] [--docs 300] [--rounds 2] [--queries 60] [--out FILE]
    python bench/bench_lake_s3.py --scale [--chunks 100000] [--files 1500] [--queries 40] [--out FILE]

`--set` names an eval set (bench/evaldir.py): its first `--docs` documents become Markdown files, and its queries are
asked. Loopback hides the network's latency: what is measured is the cost of going through httpfs and an S3 server
rather than the file system. Printed, never asserted; run it inside the bench lock.

`--scale` measures the same three backends at the size of a team's index instead. Queries: one index file of
`--chunks` chunks is built as bench/bench_scale.py builds it (real passages and postings, vectors mixed from real
embeddings: nothing is embedded per chunk), then copied into the folder lake and the bucket's lake (`Index.copy`, what
`minirag-mcp copy --from` runs); three long-lived readers in this process answer warm queries in a rotating order
(p50/p95), then one-shot CLI `query` and `status` processes, rotating too. Sync: `--files` small generated Markdown
files (three sections of real passages each; a passage recurs in other notes, but each chunk's text begins with its
note's title, so none is reused) are synced by the CLI with the packaged model into a fresh index of each kind, one
after another, then synced again unchanged in a rotated order. The load average is recorded beside each step.
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
    return synced(env)[0]


def synced(env: dict) -> tuple[float, dict]:
    "Wall seconds of one CLI `sync` process in `env`, and its report."
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "minirag.cli", "sync", "--json"], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    return time.perf_counter() - t, json.loads(r.stdout)


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


def load() -> float:
    return round(os.getloadavg()[0], 2)


def note_files(texts: list[str], root: Path, n: int) -> None:
    "`n` small Markdown notes under `root` (100 to a folder), each a title and three sections of real passages."
    for i in range(n):
        parts = [texts[(3 * i + j) % len(texts)] for j in range(3)]
        body = "\n\n".join(f"## Part {j + 1}\n\n{t}" for j, t in enumerate(parts))
        p = root / f"team{i // 100:02d}" / f"note{i:05d}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")


def one_shot(env: dict, *args: str) -> float:
    "Wall seconds of one CLI process (`query Q --top-k 8`, `status`)."
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "minirag.cli", *args], env=env, capture_output=True)
    if r.returncode:
        raise SystemExit(r.stderr.decode()[-2000:])
    return time.perf_counter() - t


def scale(args) -> dict:
    "Warm queries at `args.chunks` chunks and a sync of `args.files` new files, each backend in turn, rotating."
    import bench_scale
    from minirag.api import Index

    ev = default_eval_dir()
    work = Path(tempfile.mkdtemp(prefix="bench-s3-scale-", dir=args.work))
    model, texts, base = bench_scale.model_and_pool(args.work or work, ev)  # the pool's embeddings kept in --work
    qs = bench_scale.questions(ev, args.queries + 5)
    base_env = dict(os.environ, MODEL_NAME=str(model), CACHE_DIR=str(model.parent))
    out = dict(chunks=args.chunks, files=args.files, queries=args.queries, load_start=load())
    with Postgres() as pg, S3() as s3:
        os.environ.update(s3.env("probe"))  # this process's lakes read the object store's settings from its environment
        if args.chunks:
            src = work / "file-index"
            out["build"] = bench_scale.build(src, args.chunks, model, texts, base)
            print(f"built {args.chunks} chunks: {out['build']}", file=sys.stderr, flush=True)
            envs = {"file": dict(base_env, DB_PATH=str(src), BASE_DIR=str(src / "docs"))}
            for kind in ("folder", "s3"):
                env = dict(base_env, DB_PATH=str(work / f"reader-{kind}"), BASE_DIR=str(src / "docs"))
                env.update(lake_env(kind, pg, s3, work, 0))
                t = time.perf_counter()
                ix = Index.open(env=env)
                rows = ix.copy(from_dir=str(src))
                ix.close()
                out[f"{kind}_copy_s"] = round(time.perf_counter() - t, 1)
                out[f"{kind}_copy_rows"] = rows
                print(f"copied into {kind}: {out[f'{kind}_copy_s']} s {rows}", file=sys.stderr, flush=True)
                envs[kind] = env
            out["query_load_start"] = load()
            readers = {}
            for k in KINDS:
                t = time.perf_counter()
                readers[k] = Index.open(env=envs[k])
                readers[k].query(qs[0])
                out[f"{k}_first_query_s"] = round(time.perf_counter() - t, 2)
            assert {ix.status().chunk_count for ix in readers.values()} == {args.chunks}
            out.update(queries(readers, qs, args.queries))
            out["query_load_end"] = load()
            for ix in readers.values():
                ix.close()
            cli, status = {k: [] for k in KINDS}, {k: [] for k in KINDS}
            for i in range(args.cli):  # a one-shot process: the open, then one query, or the open and a count
                for k in rotated(i):
                    cli[k].append(one_shot(envs[k], "query", qs[1 + i], "--top-k", "8"))
                    status[k].append(one_shot(envs[k], "status"))
            for k in KINDS:
                out[f"{k}_cli_query_s"] = round(statistics.median(cli[k]), 2)
                out[f"{k}_cli_status_s"] = round(statistics.median(status[k]), 2)
            out["cli_load_end"] = load()
            print(json.dumps(out), file=sys.stderr, flush=True)
        if args.files:
            docs = work / "notes"
            note_files(texts, docs, args.files)
            envs = {}
            for kind in KINDS:
                envs[kind] = dict(base_env, BASE_DIR=str(docs), DB_PATH=str(work / f"sync-{kind}"))
                envs[kind].update(lake_env(kind, pg, s3, work, 1))
            for step, order in (("sync", rotated(0)), ("resync", rotated(1))):
                for kind in order:
                    l0 = load()
                    wall, rep = synced(envs[kind])
                    out[f"{kind}_{step}_s"] = round(wall, 1)
                    out[f"{kind}_{step}_report_s"] = round(rep["seconds"], 1)
                    out[f"{kind}_{step}_load"] = [l0, load()]
                    n = rep["skipped"] if step == "resync" else rep["ingested"]
                    assert n == args.files and not rep["failed"], rep
                    print(f"{kind} {step}: {out[f'{kind}_{step}_s']} s {rep}", file=sys.stderr, flush=True)
            ix = Index.open(env=envs["s3"])
            out["sync_chunks"] = ix.status().chunk_count
            ix.close()
    out["load_end"] = load()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="pyfaq-en")
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--scale", action="store_true", help="a team-sized index instead (--chunks, --files)")
    ap.add_argument("--chunks", type=int, default=100_000, help="--scale: chunks of the query index (0: none)")
    ap.add_argument("--files", type=int, default=1500, help="--scale: new files synced into each backend (0: none)")
    ap.add_argument("--work", type=Path, help="--scale: a folder to work in (the passage pool's embeddings are kept)")
    ap.add_argument("--cli", type=int, default=6, help="--scale: one-shot CLI queries per backend")
    args = ap.parse_args(argv)
    if args.scale:
        out = scale(args)
        print(json.dumps(out, indent=1))
        if args.out:
            old = json.loads(args.out.read_text()) if args.out.exists() else {}
            args.out.write_text(json.dumps(dict(old, scale=out), indent=1) + "\n")
        return
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
