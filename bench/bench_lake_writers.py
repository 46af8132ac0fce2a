"""Writers racing on one lake: N processes each make R rounds of writes (a batch of 1–5 sources, then a delete half
the time) with no embedding between them, so their commits collide as often as they can. Counts, per run, the
commits that lost a race (retried), the writes that still failed after all retries, and the processes that did not
exit cleanly; `--unlocked` replaces the lake's write lock by a no-op (the behaviour before it).

    python bench/bench_lake_writers.py [--procs 4] [--rounds 10] [--runs 1] [--unlocked]

Starts a real PostgreSQL (tests/pg.py), a fresh lake per run. Prints one JSON line per run. Nothing is asserted.
"""

import argparse, json, os, random, subprocess, sys, tempfile, time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def writer(url: str, data: str, home: str, rounds: int, seed: int, unlocked: bool) -> dict:
    "One writing process: its counts of lost races, failed writes and the kinds of errors seen."
    from contextlib import contextmanager, nullcontext
    import numpy as np
    from minirag.lake import LakeStore
    from minirag.tables import SourceRecord, Tables

    if unlocked:
        LakeStore.write_lock = lambda self: nullcontext()
    st = LakeStore(url, data, Path(home) / "index.duckdb")
    real, kinds = st.transaction, {}

    @contextmanager
    def counted():
        try:
            with real() as con:
                yield con
        except Exception as e:
            cause = e.__context__ if e.__context__ is not None and e.__suppress_context__ else e
            k = f"{type(e).__name__}: {' '.join(str(cause).split())[:160]}"
            kinds[k] = kinds.get(k, 0) + 1
            raise

    st.transaction = counted
    tables, rnd, failed = Tables(st), random.Random(seed), 0
    files = [f"/docs/f{i:02d}.md" for i in range(12)]
    for _ in range(rounds):
        items = []
        for s in rnd.sample(files, rnd.choice([1, 1, 1, 4, 5])):
            n = rnd.randint(1, 4)
            chunks = [
                dict(
                    chunk_index=i,
                    parent_id=f"p{i}",
                    text=f"{s} word{i}",
                    prefix_len=0,
                    section_head="",
                    kind="text",
                    tokens=3,
                    scheme=1,
                    ehash=rnd.randint(1, 2**40),
                )
                for i in range(n)
            ]
            items.append((SourceRecord(s, root="/docs"), chunks, np.random.rand(n, 8).astype("float32")))
        try:
            tables.write_batch(items, "bench-model")
            if rnd.random() < 0.5:
                tables.delete(rnd.choice(files))
        except Exception as e:
            failed += 1
            kinds[f"gave up: {type(e).__name__}"] = kinds.get(f"gave up: {type(e).__name__}", 0) + 1
    return dict(failed=failed, kinds=kinds)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--unlocked", action="store_true")
    ap.add_argument("--writer", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.writer:
        url, data, home, rounds, seed, out = a.writer
        Path(out).write_text(json.dumps(writer(url, data, home, int(rounds), int(seed), a.unlocked)))
        return
    from pg import Postgres

    tmp = Path(tempfile.mkdtemp(prefix="bench-lake-writers-"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with Postgres() as pg:
        for run in range(a.runs):
            url, t = pg.new_database(), time.perf_counter()
            procs = []
            for i in range(a.procs):
                w = [url, str(tmp / f"data{run}"), str(tmp / f"h{run}-{i}"), str(a.rounds), str(run * 100 + i)]
                w.append(str(tmp / f"out{run}-{i}.json"))
                cmd = [sys.executable, __file__, "--writer", *w] + (["--unlocked"] if a.unlocked else [])
                procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True))
            unclean, kinds, failed = 0, {}, 0
            for i, p in enumerate(procs):
                err = p.communicate()[1]
                if p.returncode or "terminate called" in err or "Traceback" in err:
                    unclean += 1
                    print(f"writer {i} exited {p.returncode}: {err[-400:]}", file=sys.stderr)
                out = tmp / f"out{run}-{i}.json"
                if out.exists():
                    got = json.loads(out.read_text())
                    failed += got["failed"]
                    for k, v in got["kinds"].items():
                        kinds[k] = kinds.get(k, 0) + v
            lost = sum(v for k, v in kinds.items() if not k.startswith("gave up"))
            print(
                json.dumps(
                    dict(
                        run=run,
                        lock=not a.unlocked,
                        procs=a.procs,
                        rounds=a.rounds,
                        seconds=round(time.perf_counter() - t, 1),
                        lost_races=lost,
                        writes_failed=failed,
                        unclean_exits=unclean,
                        errors=kinds,
                    )
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
