"""Retrieval quality on BEIR-format sets: recall@10 / MRR@10 / nDCG@10 for vector, keyword, hybrid and a weight sweep.

    python bench/bench_eval.py /work/shared/eval [--sets debfaq-en,debfaq-ru] [--out nbs/tutorials/evaluation_results.json]

Builds (once, cached under the user cache's minirag/eval) an index per set with the packaged
all-MiniLM-L6-v2 int8 model, then prints each set's table and whether hybrid nDCG@10 ≥ max(vector, keyword).
Timings (index build, query pass) are printed, never asserted. The big sets (debdesc-en, pyfaq-en) take
minutes to embed the first time.
"""
import argparse, json, sys, time
from pathlib import Path
from minirag.evaluate import evaluate, summary, sweep_table

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="folder holding BEIR set folders")
    ap.add_argument("--sets", help="comma-separated set names (default: every folder with a corpus.jsonl)")
    ap.add_argument("--weights", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1")
    ap.add_argument("--limit-queries", type=int)
    ap.add_argument("--db-dir", help="index cache (default: user cache minirag/eval)")
    ap.add_argument("--out", help="write all runs as JSON here")
    a = ap.parse_args(argv)
    root = Path(a.root)
    names = a.sets.split(",") if a.sets else sorted(p.name for p in root.iterdir() if (p/"corpus.jsonl").is_file())
    report = {}
    for n in names:
        t = time.perf_counter()
        prog = lambda d, tot: print(f"\r  {n}: embedding {d}/{tot}", end="" if d < tot else "\n", file=sys.stderr, flush=True)
        df = evaluate(root/n, a.weights, a.limit_queries, a.db_dir, progress=prog)
        s = summary(df)
        print(f"\n== {n} ({s['queries']} queries, {time.perf_counter() - t:.1f} s incl. any index build)")
        print(df[df.method != "sweep"].drop(columns=["set", "queries"]).to_string(index=False))
        print(sweep_table(df).to_string())
        print(f"hybrid ≥ max(vector, keyword): {s['hybridAtLeastBest']}")
        report[n] = dict(s, runs=df.drop(columns=["set", "queries"]).to_dict(orient="records"))
    if a.out: Path(a.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0 if all(r["hybridAtLeastBest"] for r in report.values()) else 1

if __name__ == "__main__": sys.exit(main())
