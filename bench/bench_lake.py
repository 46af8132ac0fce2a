"""The team index (a lake: PostgreSQL catalog + DuckLake Parquet files) against the index file, on the shared eval sets.

    python bench/bench_lake.py [EVAL_DIR] [--sets debfaq-en,pyfaq-en] [--limit-docs N] [--limit-queries N]
    python bench/bench_lake.py --commits 1000      # 1,000 single-source writes: files and catalog rows, maintained

For each set: writes the corpus as Markdown files, syncs it into an index file and into a lake (a real PostgreSQL
from Debian's package started in a temporary folder, tests/pg.py), then runs every query on both. Prints, per set,
whether both return the same top-10 (sources and chunk order) for every query, both syncs' seconds, warm query p50
and p90 on each, and the lake's data files and snapshots before and after `maintain`. Timings are printed, never
asserted.
"""

import argparse, json, statistics, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from evaldir import checked, default_eval_dir  # noqa: E402
from pg import Postgres  # noqa: E402


def corpus_files(set_dir: Path, out: Path, limit: int | None) -> int:
    out.mkdir(parents=True)
    lines = set_dir.joinpath("corpus.jsonl").read_text(encoding="utf-8").splitlines()[:limit]
    for i, line in enumerate(lines):
        d = json.loads(line)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(d["_id"]))[:80] or f"doc{i}"
        body = f"# {d.get('title') or d['_id']}\n\n{d['text']}\n"
        out.joinpath(f"{name}-{i}.md").write_text(body, encoding="utf-8")
    return len(lines)


def run_set(set_dir: Path, pg: Postgres, emb, model_dir: Path, args) -> dict:
    from minirag.api import Index

    tmp = Path(tempfile.mkdtemp(prefix=f"bench-lake-{set_dir.name}-"))
    n = corpus_files(set_dir, tmp / "docs", args.limit_docs)
    qs = [json.loads(l)["text"] for l in set_dir.joinpath("queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qs = qs[: args.limit_queries]
    envs = {"file": {}, "lake": dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=str(tmp / "data"))}
    out, tops = dict(set=set_dir.name, docs=n, queries=len(qs)), {}
    for name, env in envs.items():
        ix = Index.open(
            tmp / "docs",
            db_path=tmp / name,
            model_name=str(model_dir),
            cache_dir=model_dir.parent,
            env=env,
            embedder=emb,
        )
        t = time.perf_counter()
        ix.sync()
        out[f"{name}_sync_s"] = round(time.perf_counter() - t, 2)
        ix.query(qs[0], top_k=10)  # warm: matrix and postings held
        times, tops[name] = [], []
        for q in qs:
            t = time.perf_counter()
            r = ix.query(q, top_k=10)
            times.append(time.perf_counter() - t)
            tops[name].append([(h.source, h.chunk_index) for h in r.hits])
        out[f"{name}_query_p50_ms"] = round(statistics.median(times) * 1000, 1)
        out[f"{name}_query_p90_ms"] = round(statistics.quantiles(times, n=10)[-1] * 1000, 1)
        if name == "lake":
            out["lake_maintain"] = ix.store.maintain()
        ix.close()
    differ = sum(a != b for a, b in zip(tops["file"], tops["lake"]))
    out["same_top10"] = differ == 0
    out["queries_differing"] = differ
    return out


CATALOG_TABLES = (
    "ducklake_snapshot",
    "ducklake_snapshot_changes",
    "ducklake_data_file",
    "ducklake_delete_file",
    "ducklake_file_column_stats",
    "ducklake_files_scheduled_for_deletion",
)


def catalog_rows(con) -> dict:
    "Rows of the catalog tables that grow with commits (DuckLake attaches the catalog as __ducklake_metadata_lake)."
    return {t: con.execute(f"SELECT count(*) FROM __ducklake_metadata_lake.{t}").fetchone()[0] for t in CATALOG_TABLES}


def many_commits(pg: Postgres, n: int) -> dict:
    "n writes of one small source each (vectors made up: the commits are measured, not the model)."
    import numpy as np
    from minirag.lake import LakeStore, lake_counts
    from minirag.tables import SourceRecord, Tables

    tmp = Path(tempfile.mkdtemp(prefix="bench-lake-commits-"))
    st = LakeStore(pg.new_database(), str(tmp / "data"), tmp / "home" / "index.duckdb")
    tb, rnd = Tables(st), np.random.default_rng(0)
    t = time.perf_counter()
    for i in range(n):
        rows = [
            dict(
                chunk_index=0,
                parent_id=f"s{i}#0",
                text=f"note {i} about topic {i % 17}",
                prefix_len=0,
                section_head="",
                kind="text",
                tokens=6,
                scheme=3,
            )
        ]
        tb.write_batch(
            [(SourceRecord(f"notes/{i}", kind="data"), rows, rnd.standard_normal((1, 384), np.float32))], "m"
        )
    secs = time.perf_counter() - t
    with st.session() as con:
        before = dict(lake_counts(con), **catalog_rows(con))
    t = time.perf_counter()
    st.maintain()
    m = time.perf_counter() - t
    with st.session() as con:
        after = dict(lake_counts(con), **catalog_rows(con))
    st.close()
    return dict(commits=n, commit_ms=round(secs / n * 1000, 1), maintain_s=round(m, 2), before=before, after=after)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=default_eval_dir())
    ap.add_argument("--sets", help="comma-separated set names (default: every folder with a corpus.jsonl)")
    ap.add_argument("--limit-docs", type=int)
    ap.add_argument("--limit-queries", type=int)
    ap.add_argument("--commits", type=int, help="only: this many single-source writes, then maintenance")
    args = ap.parse_args(argv)
    if args.commits:
        with Postgres() as pg:
            print(json.dumps(many_commits(pg, args.commits)), flush=True)
        return
    root = checked(args.root)
    sets = (
        [root / s for s in args.sets.split(",")] if args.sets else sorted(p.parent for p in root.glob("*/corpus.jsonl"))
    )
    from minirag.embed import Embedder, packaged_model_dir

    model_dir = packaged_model_dir(Path(tempfile.mkdtemp(prefix="bench-lake-model-")))
    emb = Embedder(str(model_dir), model_dir.parent)
    with Postgres() as pg:
        for s in sets:
            print(json.dumps(run_set(s, pg, emb, model_dir, args)), flush=True)


if __name__ == "__main__":
    main()
