"""What the lake's write lock costs a lone writer, paired: the same work with the lock and with it replaced by a no-op.

    python bench/bench_lake_write_lock.py [N] [--pairs 3] [--writes 30] [--eval DIR]

Starts a real PostgreSQL (tests/pg.py), builds N files (default 200) as bench/bench_lake_sync.py does, then alternates
the two arms `--pairs` times, each on a fresh lake: a first sync of the N files (one loaded embedder for all), and
`--writes` single-row writes (`Tables.set_meta`, one commit each: where a per-commit cost shows most). Prints one
JSON line per arm and the median ratios locked / unlocked. Timings are printed, never asserted.
"""

import argparse, json, os, statistics, sys, tempfile, time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_lake_sync import build_files, one_sync  # noqa: E402
from evaldir import add_eval_arg, checked  # noqa: E402
from pg import Postgres  # noqa: E402


def small_writes(url: str, data: Path, home: Path, n: int) -> float:
    from minirag.lake import LakeStore
    from minirag.tables import Tables

    st = LakeStore(url, str(data), home / "index.duckdb")
    Tables(st).set_meta(k=-1)  # opened and laid out before the clock starts
    t = time.perf_counter()
    for i in range(n):
        Tables(st).set_meta(k=i)
    secs = time.perf_counter() - t
    st.close()
    return secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--writes", type=int, default=30)
    add_eval_arg(ap)
    a = ap.parse_args(argv)
    from minirag.embed import Embedder, packaged_model_dir
    from minirag.lake import LakeStore

    locked = LakeStore.write_lock
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="bench-lake-lock-")))
    build_files(checked(a.eval_dir), a.n, tmp / "docs")
    model = packaged_model_dir(tmp / "models")
    emb = Embedder(str(model), model.parent)
    emb.embed(["warm up"])
    ratios = {"sync": [], "writes": []}
    with Postgres() as pg:
        for i in range(a.pairs):
            got = {}
            for arm in ("locked", "unlocked") if i % 2 == 0 else ("unlocked", "locked"):  # A B, then B A
                LakeStore.write_lock = locked if arm == "locked" else (lambda self: nullcontext())
                lake = dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=str(tmp / f"data-{arm}{i}"))
                s = one_sync(tmp / "docs", tmp / f"{arm}{i}", lake, model, emb)
                w = small_writes(pg.new_database(), tmp / f"w-{arm}{i}", tmp / f"w-{arm}{i}", a.writes)
                got[arm] = dict(
                    arm=arm, sync_seconds=s["seconds"], commits=s.get("snapshots"), writes_seconds=round(w, 2)
                )
                print(json.dumps(got[arm]), flush=True)
            ratios["sync"].append(got["locked"]["sync_seconds"] / got["unlocked"]["sync_seconds"])
            ratios["writes"].append(got["locked"]["writes_seconds"] / got["unlocked"]["writes_seconds"])
        LakeStore.write_lock = locked
    med = {k: round(statistics.median(v), 2) for k, v in ratios.items()}
    print(json.dumps(dict(files=a.n, pairs=a.pairs, writes=a.writes, ratios=ratios, median_ratio=med)))


if __name__ == "__main__":
    main()
