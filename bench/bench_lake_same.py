"""Both backends rank alike: every query of every shared eval set returns the same top-10 on the file and on the lake.

    python bench/bench_lake_same.py [EVAL_DIR] [--sets debfaq-en,pyfaq-en] [--limit-queries N] [--db-dir DIR]
        [--progress N] [--max-seconds S]

For each set: builds (once, cached like bench/bench_eval.py) the set's index file, copies it into a fresh lake on a
real PostgreSQL (tests/pg.py) with `copy_index` — the same rows and vectors, nothing embedded twice — then runs
every judged query through `Index.query(top_k=10)` on both and compares the hits (source and chunk, in order). Prints
one JSON line per set: queries compared, queries differing (with the first few), chunks, seconds. Exits 1 if any
query differs.
"""

import argparse, json, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from evaldir import checked, default_eval_dir  # noqa: E402
from pg import Postgres  # noqa: E402


def top10(ix, queries: list[str]) -> list[list[tuple]]:
    "Each query's top-10 hits as (source, chunk index), best first."
    return [[(h.source, h.chunk_index) for h in ix.query(q, top_k=10).hits] for q in queries]


def remember_queries(emb, queries: list[str]):
    "Embed the queries once, in batches, so each backend's query reads the same vector (the ranking is compared)."
    known = dict(zip(queries, emb.embed_queries(queries)))
    embed_one = type(emb).embed_query.__get__(emb)
    emb.embed_query = lambda q: known[q] if q in known else embed_one(q)


def compare_set(
    folder: Path, pg: Postgres, emb, model_dir: Path, db_dir=None, limit_queries=None, progress=0, max_seconds=None
) -> dict:
    from minirag.api import Index
    from minirag.evaluate import load_beir, open_eval_index
    from minirag.lake import copy_index

    t0 = time.perf_counter()
    ds = load_beir(folder, limit_queries)
    store = open_eval_index(ds, emb, db_dir)  # cached: built once per (corpus, model, scheme)
    home = store.db_file.parent
    store.close()
    build_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-same-{ds.name}-"))
    lake_env = dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=str(tmp / "data"))
    # data sources only: the root is never scanned, it just has to exist
    opened = dict(model_name=str(model_dir), embedder=emb, cache_dir=model_dir.parent)
    fix = Index.open(tmp, db_path=home, env={}, **opened)
    lix = Index.open(tmp, db_path=tmp / "lake-home", env=lake_env, **opened)
    t = time.perf_counter()
    copied = copy_index(fix.store, lix.store)
    copy_s = time.perf_counter() - t
    qs = list(ds.queries.values())
    in_set = len(qs)
    remember_queries(emb, qs)
    # query by query on both, so a progress line (and a run cut short by --max-seconds) counts what was compared
    a, b, file_s, lake_s, t0q = [], [], 0.0, 0.0, time.perf_counter()
    for i, q in enumerate(qs, 1):
        t = time.perf_counter()
        a += top10(fix, [q])
        t2 = time.perf_counter()
        b += top10(lix, [q])
        file_s, lake_s = file_s + t2 - t, lake_s + time.perf_counter() - t2
        cut = max_seconds is not None and time.perf_counter() - t0q > max_seconds
        if progress and (i % progress == 0 or i == len(qs) or cut):
            same = sum(x == y for x, y in zip(a, b))
            line = dict(set=ds.name, compared=i, of=in_set, identical=same, s=round(time.perf_counter() - t0q))
            print(json.dumps(line), file=sys.stderr, flush=True)
        if cut:
            break
    qs = qs[: len(a)]
    fix.close()
    lix.close()
    differ = [(q, x[:3], y[:3]) for q, x, y in zip(qs, a, b) if x != y]
    return dict(
        set=ds.name,
        queries=len(qs),
        queries_in_set=in_set,
        queries_differing=len(differ),
        empty_results=sum(not x for x in a),
        chunks=copied["chunks"],
        first_differing=differ[:3],
        build_s=round(build_s, 1),
        copy_s=round(copy_s, 1),
        file_queries_s=round(file_s, 1),
        lake_queries_s=round(lake_s, 1),
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=default_eval_dir())
    ap.add_argument("--sets", help="comma-separated set names (default: every folder with a corpus.jsonl)")
    ap.add_argument("--limit-queries", type=int)
    ap.add_argument(
        "--progress", type=int, default=0, metavar="N", help="print a progress line to stderr every N queries"
    )
    ap.add_argument(
        "--max-seconds", type=float, help="stop querying a set after this long and report what was compared"
    )
    ap.add_argument("--db-dir", help="index cache (default: user cache minirag/eval, as bench/bench_eval.py)")
    args = ap.parse_args(argv)
    root = checked(args.root)
    names = args.sets.split(",") if args.sets else sorted(p.parent.name for p in root.glob("*/corpus.jsonl"))
    from minirag.embed import Embedder, packaged_model_dir

    model_dir = packaged_model_dir(Path(tempfile.mkdtemp(prefix="bench-same-model-")))
    emb = Embedder(str(model_dir), model_dir.parent)
    bad = 0
    with Postgres() as pg:
        for n in names:
            r = compare_set(
                root / n, pg, emb, model_dir, args.db_dir, args.limit_queries, args.progress, args.max_seconds
            )
            bad += r["queries_differing"]
            print(json.dumps(r, ensure_ascii=False), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
