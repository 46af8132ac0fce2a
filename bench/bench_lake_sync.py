"""A first sync of the sync benchmark's files into the index file and into a lake, paired: lake time / file time.

    python bench/bench_lake_sync.py [N] [--pairs 2] [--eval DIR]

Builds N files (default 1,500) from the eval sets' corpus.jsonl as bench/bench_sync.py does, starts a real PostgreSQL
(tests/pg.py), then alternates a full first sync into a fresh index file and into a fresh lake, `--pairs` times, with
one loaded embedder for all. Prints one JSON line per sync (seconds, commits the lake took) and the median ratio.
Timings are printed, never asserted.
"""

import argparse, json, os, statistics, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from evaldir import add_eval_arg, checked  # noqa: E402
from pg import Postgres  # noqa: E402


def build_files(eval_dir: Path, n: int, root: Path):
    docs = []
    for f in sorted(eval_dir.glob("*/corpus.jsonl")):
        for line in open(f, encoding="utf-8"):
            d = json.loads(line)
            docs.append(((d.get("title") or "").strip(), d["text"]))
            if len(docs) >= n:
                break
        if len(docs) >= n:
            break
    for i, (title, text) in enumerate(docs):
        p = root / f"d{i // 100:02}" / f"doc{i:05}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text((f"# {title}\n\n" if title else "") + text + "\n", encoding="utf-8")


def one_sync(root: Path, home: Path, env: dict, model: Path, emb) -> dict:
    from minirag.api import Index

    ix = Index.open(root, db_path=home, model_name=str(model), cache_dir=model.parent, env=env, embedder=emb)
    t = time.perf_counter()
    r = ix.sync()
    secs = time.perf_counter() - t
    out = dict(backend="lake" if ix.store.is_lake else "file", seconds=round(secs, 1), ingested=r.ingested)
    if ix.store.is_lake:
        from minirag.lake import lake_counts

        with ix.store.session() as con:
            out["snapshots"] = lake_counts(con)["snapshots"]
    ix.close()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=1500)
    ap.add_argument("--pairs", type=int, default=2)
    add_eval_arg(ap)
    a = ap.parse_args(argv)
    from minirag.embed import Embedder, packaged_model_dir

    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="bench-lake-sync-")))
    build_files(checked(a.eval_dir), a.n, tmp / "docs")
    model = packaged_model_dir(tmp / "models")
    emb = Embedder(str(model), model.parent)
    emb.embed(["warm up"])
    ratios = []
    with Postgres() as pg:
        for i in range(a.pairs):
            f = one_sync(tmp / "docs", tmp / f"file{i}", {}, model, emb)
            lake = dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=str(tmp / f"data{i}"))
            k = one_sync(tmp / "docs", tmp / f"lake{i}", lake, model, emb)
            ratios.append(k["seconds"] / f["seconds"])
            print(json.dumps(f), json.dumps(k), f"ratio {ratios[-1]:.2f}", flush=True)
    print(json.dumps(dict(files=a.n, pairs=a.pairs, median_ratio=round(statistics.median(ratios), 2))))


if __name__ == "__main__":
    main()
