"""A lake after many small writes, before and after `minirag-mcp maintain`: data files, snapshots and catalog rows, and
the longest query a reader waited while maintenance ran.

    python bench/bench_lake_maintain.py [--ingests 1000] [--chunks 3]

Starts a real PostgreSQL (tests/pg.py), makes a lake and writes `--ingests` single-file ingests into it, one commit
each, as `minirag-mcp ingest FILE` does (each file `--chunks` chunks of made-up prose; the vectors are random — the
commits are measured, not the model). Then a reader process queries the lake in a loop (hybrid queries through
`Index.query`, the packaged model) while `minirag-mcp maintain --json` runs as its own process. Prints one JSON line:
counts before, after `maintain`, and after the retention window has passed (the snapshots an hour old expired and
their files removed, as the next `maintain` an hour later does), the longest query latency during `maintain` against
the median before it, and the commits a `sync` of `--sync-files` small files made. Timings are printed, never
asserted.
"""

import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from pg import Postgres  # noqa: E402

WORDS = (
    "team index lake catalog snapshot parquet file folder machine sync query chunk vector posting holiday policy "
    "bread dough oven tea kettle coffee bean grind brew note meeting budget travel report review draft release "
    "server client network drive backup restore commit merge expire retention reader writer lock host pid"
).split()

READER = r"""
import sys, time, json
from minirag.api import Index
root, home, model = sys.argv[1:4]
ix = Index.open(root, db_path=home, model_name=model, cache_dir=sys.argv[4], env=json.loads(sys.argv[5]))
qs = ["holiday policy", "bread dough oven", "backup restore", "team lake catalog", "coffee grind brew"]
ix.query(qs[0])
print("ready", flush=True)
i = 0
while True:
    t = time.time()
    try:
        ix.query(qs[i % len(qs)], top_k=8)
        print(f"{t:.3f} {time.time() - t:.4f}", flush=True)
    except Exception as e:  # a failed query is counted, and its error kept
        print(f"{t:.3f} {time.time() - t:.4f} {type(e).__name__}: {str(e)[:300]!r}", flush=True)
    i += 1
"""


def catalog_rows(catalog: str) -> dict:
    "Rows of every ducklake_* table in the catalog database (PostgreSQL), counted exactly."
    from minirag.lake import _pg, _pg_query

    con = _pg(catalog, "minirag bench")
    try:
        names = [
            r[0]
            for r in _pg_query(
                con,
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                "AND table_name LIKE 'ducklake%' ORDER BY 1",
            )
        ]
        out = {n: _pg_query(con, f'SELECT count(*) FROM "{n}"')[0][0] for n in names}
    finally:
        con.close()
    inlined = {k: v for k, v in out.items() if k.startswith("ducklake_inlined_data")}
    grown = ("ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_data_file", "ducklake_delete_file")
    big = {k: out[k] for k in grown + ("ducklake_file_column_stats", "ducklake_files_scheduled_for_deletion")}
    return dict(catalog_rows=sum(out.values()), inlined_rows=sum(inlined.values()), catalog_tables=len(out), **big)


def counts(st, data: Path) -> dict:
    from minirag.lake import lake_counts

    with st.session() as con:
        c = lake_counts(con)
    return dict(c, parquet_on_disk=sum(1 for _ in data.rglob("*.parquet")), **catalog_rows(st.catalog))


def ingest_many(tb, n: int, chunks: int, model_id: str) -> float:
    "n single-file writes, one commit each; the median seconds of one."
    from minirag.tables import SourceRecord

    rnd, times = np.random.default_rng(0), []
    for i in range(n):
        rows = [
            dict(
                chunk_index=c,
                parent_id=f"notes/{i}.md#{c}",
                text=" ".join(rnd.choice(WORDS, 80)),
                prefix_len=0,
                section_head="",
                kind="text",
                tokens=90,
                scheme=3,
            )
            for c in range(chunks)
        ]
        vecs = rnd.standard_normal((chunks, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rec = SourceRecord(f"/team/notes/{i}.md", kind="file", title=f"Note {i}", content_hash=f"h{i}", size=600)
        t = time.perf_counter()
        tb.write_batch([(rec, rows, vecs)], model_id)
        times.append(time.perf_counter() - t)
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{n} written, {statistics.median(times) * 1000:.0f} ms a commit", file=sys.stderr)
    return statistics.median(times)


def expire_now(st):
    "What the next `maintain` does once the retention window has passed: expire, then remove the files."
    from minirag.lake import LAKE

    with st.session() as con:
        for sql in (
            f"SELECT count(*) FROM ducklake_expire_snapshots('{LAKE}', older_than => now())",
            f"SELECT count(*) FROM ducklake_cleanup_old_files('{LAKE}', cleanup_all => true)",
            f"SELECT count(*) FROM ducklake_delete_orphaned_files('{LAKE}', cleanup_all => true)",
        ):
            con.execute(sql).fetchall()


def sync_commits(env: dict, tmp: Path, files: int) -> dict:
    "Snapshots a `sync` of `files` small files adds to the lake (one per commit)."
    docs = tmp / "sync-docs"
    docs.mkdir()
    rnd = np.random.default_rng(1)
    for i in range(files):
        docs.joinpath(f"d{i}.md").write_text(f"# Doc {i}\n\n{' '.join(rnd.choice(WORDS, 60))}\n", encoding="utf-8")
    e = dict(env, BASE_DIR=str(docs), DB_PATH=str(tmp / "sync-home"))
    snaps = lambda: json.loads(_cli(e, "maintain", "--json"))["before"]["snapshots"]  # noqa: E731
    # maintain's own commits are counted apart: before, the lake is maintained, so its counts are the sync's
    _cli(e, "maintain", "--json")
    a = snaps()
    t = time.perf_counter()
    r = json.loads(_cli(e, "sync", "--json"))
    secs = time.perf_counter() - t
    b = snaps()
    return dict(sync_files=r["ingested"], sync_snapshots=b - a, sync_s=round(secs, 1))


def _cli(env, *args) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "minirag.cli", *args], capture_output=True, text=True, env=env, timeout=1800
    )
    if r.returncode:
        sys.exit(f"minirag-mcp {' '.join(args)} failed: {r.stderr[-2000:]}")
    return r.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ingests", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=3, help="chunks of each file")
    ap.add_argument("--sync-files", type=int, default=300)
    a = ap.parse_args(argv)
    from minirag.embed import Embedder, packaged_model_dir
    from minirag.lake import LakeStore
    from minirag.tables import Tables

    tmp = Path(tempfile.mkdtemp(prefix="bench-lake-maintain-"))
    model_dir = packaged_model_dir(tmp / "models")
    model_id = Embedder(str(model_dir), model_dir.parent).model_id
    with Postgres() as pg:
        catalog, data = pg.new_database(), tmp / "data"
        lake = dict(MINIRAG_CATALOG=catalog, MINIRAG_DATA=str(data))
        env = dict(os.environ, **lake, MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent), PYTHONPATH=str(REPO))
        st = LakeStore(catalog, str(data), tmp / "writer" / "index.duckdb")
        t = time.perf_counter()
        commit_s = ingest_many(Tables(st), a.ingests, a.chunks, model_id)
        out = dict(ingests=a.ingests, chunks_each=a.chunks, commit_ms=round(commit_s * 1000), write_s=0.0)
        out["write_s"] = round(time.perf_counter() - t, 1)
        out["before"] = counts(st, data)
        st.close()
        (tmp / "root").mkdir()
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(tmp / "root"), str(tmp / "reader"), str(model_dir)]
            + [str(model_dir.parent), json.dumps(lake)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert reader.stdout.readline().strip() == "ready"
        time.sleep(8)  # queries before maintenance: the baseline
        t0 = time.time()
        m = json.loads(_cli(env, "maintain", "--json"))
        t1 = time.time()
        time.sleep(2)
        reader.terminate()
        lines = [line.split(" ", 2) for line in reader.stdout.read().splitlines() if line.strip()]
        reader.wait()
        lat = [(float(s), float(d)) for s, d, *_ in lines]
        out["queries_failed"] = sum(len(x) > 2 for x in lines)
        out["first_failure"] = next((x[2] for x in lines if len(x) > 2), None)
        out["maintain_s"] = round(t1 - t0, 1)
        base = [d for s, d in lat if s + d < t0]
        during = [d for s, d in lat if s < t1 and s + d > t0]
        out["query_median_before_ms"] = round(statistics.median(base) * 1000) if base else None
        out["query_max_during_maintain_ms"] = round(max(during) * 1000) if during else None
        out["queries_during_maintain"] = len(during)
        st = LakeStore(catalog, str(data), tmp / "writer" / "index.duckdb")
        out["after_maintain"] = counts(st, data)
        out["maintain_reported"] = m
        expire_now(st)
        out["after_retention"] = counts(st, data)
        st.close()
        if a.sync_files:
            pg2 = pg.new_database()
            out.update(sync_commits(dict(env, MINIRAG_CATALOG=pg2, MINIRAG_DATA=str(tmp / "data2")), tmp, a.sync_files))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
