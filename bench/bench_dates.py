"""What a date filter costs a query, against a scope of the same size, on bench_scale's synthetic index.

    python bench/bench_dates.py --eval ../shared/eval        # 100k chunks, built in the temp folder
    python bench/bench_dates.py --sizes 10000 --queries 20 --no-json

Each source of the index gets a date spread over 2020-2026 (as if from its name). A filter is measured on a range that
keeps 1 % of the sources — the same share as bench_scale's one-folder scope — and on one that keeps 30 %, in a process
that holds the vectors (the MCP server) and in one-shot CLI calls. The filter resolves to the sources it keeps, which
both sides then rank within before their cut, as they do within a scope.
"""

import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from evaldir import add_eval_arg, checked
import bench_scale as scale

SPAN_DAYS = 2400  # 2020-01-01 plus up to ~6.5 years


def date_sources(db_dir: Path):
    "Give every source a date spread evenly over SPAN_DAYS, by its number (as a file name would)."
    import duckdb

    con = duckdb.connect(str(db_dir / "index.duckdb"))
    con.execute("ALTER TABLE sources ADD COLUMN IF NOT EXISTS doc_date DATE")
    con.execute("ALTER TABLE sources ADD COLUMN IF NOT EXISTS date_source VARCHAR")
    con.execute(
        f"UPDATE sources SET doc_date = DATE '2020-01-01' + ((hash(source) % {SPAN_DAYS})::INTEGER), "
        "date_source = 'name'"
    )
    con.execute("UPDATE meta SET value = (value::BIGINT + 1)::VARCHAR WHERE key = 'generation'")
    con.execute("CHECKPOINT")
    con.close()


def window(share: float) -> tuple[str, str]:
    "A date range holding about `share` of the sources."
    import datetime as dt

    lo = dt.date(2022, 3, 1)
    return lo.isoformat(), (lo + dt.timedelta(days=round(share * SPAN_DAYS) - 1)).isoformat()


def measure(db_dir: Path, model: Path, queries: list[str], cli_runs: int) -> dict:
    from minirag.api import Index

    root = db_dir / "docs"
    root.mkdir(exist_ok=True)
    scope = f"{root}/part37"
    ix = Index.open(root, db_path=db_dir, model_name=str(model), cache_dir=db_dir.parent / "models", idle_close=0.5)
    ix.query(queries[0], 8)
    d1, d30 = window(0.01), window(0.30)
    with ix.store.session() as con:
        kept = {k: len(ix.tables.select_sources(None, *w, con=con).sources) for k, w in (("1pct", d1), ("30pct", d30))}
        total = ix.tables.counts(con)["sources"]
    out = dict(sources=total, kept_1pct=kept["1pct"], kept_30pct=kept["30pct"])

    def lat(fn):
        ts = []
        for q in queries[1:]:
            t = time.perf_counter()
            fn(q)
            ts.append(time.perf_counter() - t)
        return dict(p50_ms=round(1000 * statistics.median(ts), 1), p95_ms=round(1000 * scale.pct(ts, 0.95), 1))

    out["held"] = dict(
        plain=lat(lambda q: ix.query(q, 8)),
        scope_1pct=lat(lambda q: ix.query(q, 8, scope)),
        dates_1pct=lat(lambda q: ix.query(q, 8, date_from=d1[0], date_to=d1[1])),
        dates_30pct=lat(lambda q: ix.query(q, 8, date_from=d30[0], date_to=d30[1])),
        scope_1pct_and_dates_30pct=lat(lambda q: ix.query(q, 8, scope, date_from=d30[0], date_to=d30[1])),
    )
    r = ix.query(queries[1], 8, date_from=d1[0], date_to=d1[1])
    assert r.hits and all(d1[0] <= s.date.value <= d1[1] for s in r.sources), "every hit is in the range"
    ix.close()
    cli = str(Path(sys.executable).parent / "minirag-mcp")
    env = dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(db_dir),
        MODEL_NAME=str(model),
        CACHE_DIR=str(db_dir.parent / "models"),
    )

    def one_shot(*args):
        ts = []
        for q in queries[1 : 1 + cli_runs]:
            t = time.perf_counter()
            p = subprocess.run([cli, "query", q, "--json", *args], capture_output=True, text=True, env=env)
            ts.append(time.perf_counter() - t)
            assert p.returncode == 0, p.stderr[-500:]
        return dict(p50_ms=round(1000 * statistics.median(ts), 1))

    one_shot()  # the vector snapshot is written by the first call
    out["one_shot_cli"] = dict(
        plain=one_shot(),
        scope_1pct=one_shot("--scope", scope),
        dates_1pct=one_shot("--date-from", d1[0], "--date-to", d1[1]),
    )
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000", help="comma-separated chunk counts")
    ap.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "minirag-dates", help="where indexes are built"
    )
    ap.add_argument("--queries", type=int, default=40, help="warm queries per measurement")
    ap.add_argument("--cli-runs", type=int, default=5, help="one-shot CLI queries per measurement")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "dates.json")
    ap.add_argument("--no-json", action="store_true", help="print only")
    add_eval_arg(ap)
    a = ap.parse_args()
    ev = checked(a.eval_dir)
    a.dir.mkdir(parents=True, exist_ok=True)
    model, texts, base = scale.model_and_pool(a.dir, ev)
    results = []
    for n in [int(s) for s in a.sizes.split(",")]:
        d = a.dir / f"n{n}"
        if not (d / "index.duckdb").exists():
            print(json.dumps(dict(built=scale.build(d, n, model, texts, base))), flush=True)
        date_sources(d)
        r = dict(chunks=n, **measure(d, model, scale.questions(ev, a.queries + 1), a.cli_runs))
        results.append(r)
        print(json.dumps(r), flush=True)
    if results and not a.no_json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(dict(machine=f"{os.cpu_count()} cores", sizes=results), indent=1) + "\n")
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
