"""Retrieval quality on BEIR-format sets: recall@10 / MRR@10 / nDCG@10 for vector, keyword, hybrid and a weight sweep.

    python bench/bench_eval.py [EVAL_DIR] [--sets debfaq-en,debfaq-ru] [--out nbs/tutorials/evaluation_results.json]

Also evaluates the held-out sets in bench/eval_sets/ (built by tools/build_eval_sets.py; never used to choose a
constant) unless `--held-out ''`. Every table reports nDCG@10 on the whole set and on each half of its queries:
constants (search.DOC_CONTEXT, DOC_BM25, VEC_SPREAD, KW_SPREAD, VOCAB_SHARE) were chosen on the `tuning` half of the
shared sets, so the `held-out` column and the held-out sets are the honest figures.

Builds (once, cached under the user cache's minirag/eval) an index per set with the packaged
all-MiniLM-L6-v2 int8 model, then prints each set's table and whether hybrid nDCG@10 ≥ max(vector, keyword).
Timings (index build, query pass) are printed, never asserted. The big sets (debdesc-en, pyfaq-en) take
minutes to embed the first time.
"""

import argparse, json, sys, time
from pathlib import Path
from minirag.evaluate import evaluate, summary, sweep_table
from evaldir import checked, default_eval_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "root",
        nargs="?",
        type=Path,
        default=default_eval_dir(),
        help="folder holding BEIR set folders (default: $MINIRAG_EVAL_DIR or ../shared/eval beside the repo)",
    )
    ap.add_argument("--sets", help="comma-separated set names (default: every folder with a corpus.jsonl)")
    ap.add_argument(
        "--held-out",
        default=str(Path(__file__).resolve().parent / "eval_sets"),
        help="folder of held-out sets evaluated too ('' to skip; default bench/eval_sets)",
    )
    ap.add_argument("--weights", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1")
    ap.add_argument("--limit-queries", type=int)
    ap.add_argument("--db-dir", help="index cache (default: user cache minirag/eval)")
    ap.add_argument("--out", help="write all runs as JSON here")
    a = ap.parse_args(argv)
    root = checked(a.root)
    names = a.sets.split(",") if a.sets else sorted(p.name for p in root.iterdir() if (p / "corpus.jsonl").is_file())
    folders = {n: root / n for n in names}
    held = Path(a.held_out) if a.held_out else None
    if held and held.is_dir():
        folders.update(
            {
                p.name: p
                for p in sorted(held.iterdir())
                if (p / "corpus.jsonl").is_file() and (not a.sets or p.name in names)
            }
        )
    report = {}
    for n, folder in folders.items():
        t = time.perf_counter()
        prog = lambda d, tot: print(
            f"\r  {n}: embedding {d}/{tot}", end="" if d < tot else "\n", file=sys.stderr, flush=True
        )
        df = evaluate(folder, a.weights, a.limit_queries, a.db_dir, progress=prog)
        s = summary(df)
        print(f"\n== {n} ({s['queries']} queries, {time.perf_counter() - t:.1f} s incl. any index build)")
        print(df[df.method != "sweep"].drop(columns=["set", "queries"]).to_string(index=False))
        print(sweep_table(df).to_string())
        for lang, r in s.get("languages", {}).items():
            print(f"language {lang}: {r}")
        print(
            f"hybrid ≥ max(vector, keyword): {s['hybridAtLeastBest']} "
            f"(held-out half: {s.get('hybridAtLeastBestHeldOut')})"
        )
        report[n] = dict(
            s,
            heldOutSet=bool(held and folder.parent == held),
            runs=df.drop(columns=["set", "queries"]).to_dict(orient="records"),
        )
    if a.out:
        Path(a.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0 if all(r["hybridAtLeastBest"] for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
