"""Foundation benchmark: embedder vs ingest throughput, vector/BM25/hybrid latency at scale, one-file ingest cost.

    python bench/bench_index.py                 # 10k and 100k chunks
    python bench/bench_index.py --sizes 10000   # quicker
    python bench/bench_index.py --eval DIR      # eval sets elsewhere (default ../shared/eval beside the repo)

Chunk texts are real passages from ../shared/eval corpora (Debian and Python documentation); vectors for the
scaled index are mixtures of real embeddings of those passages plus noise, so neighbourhoods look like real data.
"""

import argparse, json, random, sys, tempfile, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from minirag.api import Index, ingest_paths
from minirag.wire import to_wire
from minirag.embed import Embedder, packaged_model_dir
from minirag.store import connect
from minirag.tables import SourceRecord
from minirag.search import vector_search, keyword_search

sys.path.insert(0, str(ROOT / "bench"))
from evaldir import add_eval_arg, checked, default_eval_dir

EVAL = [default_eval_dir()]  # set from --eval in main()


def eval_dir():
    return checked(EVAL[0])


def passages(n, seed=0):
    "Real ~100-token passages cut from the eval corpora."
    out = []
    for s in ["debdesc-en", "pyfaq-en", "debfaq-en", "debfaq-ru"]:
        for line in open(eval_dir() / s / "corpus.jsonl", encoding="utf-8"):
            t = json.loads(line)["text"].strip()
            words = t.split()
            for i in range(0, len(words), 60):
                p = " ".join(words[i : i + 60])
                if len(p) > 120:
                    out.append(p)
    random.Random(seed).shuffle(out)
    return out[:n]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def ms(x):
    return round(1000 * x, 1)


def timeit(fn, n):
    ts = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        ts.append(time.perf_counter() - t)
    return dict(p50_ms=ms(pct(ts, 0.5)), p95_ms=ms(pct(ts, 0.95)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--skip-hnsw", action="store_true")
    add_eval_arg(ap)
    a = ap.parse_args()
    EVAL[0] = a.eval_dir
    work = Path(tempfile.mkdtemp(prefix="minirag-bench-"))
    model = packaged_model_dir(work / "models")
    emb = Embedder(str(model), work / "models")
    report = {}

    texts = passages(4000)
    emb.embed(texts[:32])  # warm-up (model load)
    base_vecs = emb.embed(texts[:640])

    # 1-2. full ingest of files made from real passages, then the raw embedder on exactly the chunk texts it stored
    root = work / "docs"
    root.mkdir()
    for i in range(64):
        body = "\n\n".join(texts[1000 + i * 10 : 1000 + i * 10 + 10])
        (root / f"doc{i:03d}.md").write_text(f"# Document {i}\n\n{body}\n")
    ix = Index.open(root, db_path=work / "ingest-db", model_name=str(model), cache_dir=work / "models", embedder=emb)
    t = time.perf_counter()
    r = to_wire(ingest_paths(ix, [root]))
    dt = time.perf_counter() - t
    n_chunks = to_wire(ix.status())["chunkCount"]
    with ix.store.session() as con:
        chunk_texts = [x[0] for x in con.execute("SELECT text FROM chunks").fetchall()]
    t = time.perf_counter()
    emb.embed(chunk_texts)
    raw = len(chunk_texts) / (time.perf_counter() - t)
    report["raw_embedder_chunks_per_s"] = round(raw, 1)
    report["full_ingest"] = dict(
        files=r["ingested"],
        chunks=n_chunks,
        seconds=round(dt, 2),
        chunks_per_s=round(n_chunks / dt, 1),
        ratio_to_raw=round(n_chunks / dt / raw, 2),
    )

    # 3. scaled indexes
    rng = np.random.default_rng(0)
    qtexts = texts[2000 : 2000 + a.queries]
    qvecs = emb.embed(qtexts)
    words = [w for t in texts[:3000] for w in t.split() if w.isalpha() and len(w) > 4]
    kwq = [" ".join(random.Random(i).sample(words, 2)) for i in range(a.queries)]
    for n in [int(s) for s in a.sizes.split(",")]:
        db = work / f"scale-{n}" / "index.duckdb"
        six = Index.open(root, db_path=db.parent, model_name=str(model), cache_dir=work / "models", embedder=emb)
        per = 50
        t = time.perf_counter()
        held = six.store.session()
        held.__enter__()  # one connection for the bulk build, as a sync holds it
        for s in range(n // per):
            idx = rng.integers(0, len(base_vecs), size=(per, 2))
            v = (
                base_vecs[idx[:, 0]]
                + 0.5 * base_vecs[idx[:, 1]]
                + 0.05 * rng.standard_normal((per, base_vecs.shape[1])).astype(np.float32)
            )
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            rows = [
                dict(
                    chunk_index=i,
                    parent_id=str(i // 4),
                    text=texts[int(idx[i, 0]) % len(texts)],
                    prefix_len=0,
                    section_head="",
                    kind="text",
                    tokens=100,
                    scheme=1,
                )
                for i in range(per)
            ]
            six.engine.tables.write_batch(
                [(SourceRecord(f"{root}/bulk/{s:05d}.md", root=str(root)), rows, v)], emb.model_id
            )
        held.__exit__(None, None, None)
        build = time.perf_counter() - t
        t = time.perf_counter()
        six.engine.tables.maintain(force=True)
        cluster_s = time.perf_counter() - t
        res = dict(build_seconds=round(build, 1), rows_per_s=round(n / build), cluster_postings_s=round(cluster_s, 2))
        with six.store.session() as con:
            t = time.perf_counter()
            vector_search(con, f"bench{n}", qvecs[0], 10)
            res["vector_cache_load_ms"] = ms(time.perf_counter() - t)
            exact = [[i for i, _ in vector_search(con, f"bench{n}", q, 10)] for q in qvecs]
            res["vector_exact_numpy"] = timeit(lambda i: vector_search(con, f"bench{n}", qvecs[i], 40), a.queries)
            dim = qvecs.shape[1]
            res["vector_exact_sql"] = timeit(
                lambda i: con.execute(
                    f"SELECT id FROM chunks ORDER BY array_cosine_distance(emb, ?::FLOAT[{dim}]) LIMIT 40",
                    [qvecs[i].tolist()],
                ).fetchall(),
                min(20, a.queries),
            )
            scope = f"{root}/bulk/0"
            res["vector_scoped_numpy"] = timeit(
                lambda i: vector_search(con, f"bench{n}", qvecs[i], 40, scope), a.queries
            )
            res["bm25"] = timeit(lambda i: keyword_search(con, kwq[i], 40), a.queries)
            if not a.skip_hnsw:
                tbl = con.execute("SELECT id, emb FROM chunks").arrow().read_all()
                h = connect(":memory:", extensions=("vss",))
                h.execute(f"CREATE TABLE v(id BIGINT, emb FLOAT[{dim}])")
                h.register("t", tbl)
                h.execute("INSERT INTO v SELECT * FROM t")
                t = time.perf_counter()
                h.execute("CREATE INDEX hn ON v USING HNSW(emb) WITH (metric='cosine')")
                res["hnsw_build_s"] = round(time.perf_counter() - t, 1)
                approx = []

                def hq(i):
                    approx.append(
                        [
                            r[0]
                            for r in h.execute(
                                f"SELECT id FROM v ORDER BY array_cosine_distance(emb, ?::FLOAT[{dim}]) LIMIT 10",
                                [qvecs[i].tolist()],
                            ).fetchall()
                        ]
                    )

                res["vector_hnsw"] = timeit(hq, a.queries)
                res["hnsw_recall_at_10"] = round(
                    float(np.mean([len(set(x) & set(e)) / 10 for x, e in zip(approx, exact)])), 3
                )
                h.close()
        res["exact_recall_at_10"] = 1.0  # the query path is exact by construction (tests compare it with SQL)
        six.query(qtexts[0], 8)
        res["hybrid_query_one_shot_process"] = timeit(
            lambda i: six.query(qtexts[i], 8), a.queries
        )  # opens the file per query
        srv = Index.open(
            root, db_path=db.parent, model_name=str(model), cache_dir=work / "models", embedder=emb, idle_close=0.5
        )
        srv.query(qtexts[0], 8)
        res["hybrid_query_long_lived_process"] = timeit(
            lambda i: srv.query(qtexts[i], 8), a.queries
        )  # as the MCP server holds it
        srv.close()
        # one small file into the big index
        f = root / "zz-new.md"
        f.write_text("# New note\n\n" + "\n\n".join(texts[3000:3010]))
        t = time.perf_counter()
        six.ingest(f)
        res["one_file_ingest_s"] = round(time.perf_counter() - t, 2)
        calls0 = emb.calls
        t = time.perf_counter()
        six.ingest(f)
        res["one_file_reingest_s"] = round(time.perf_counter() - t, 2)
        res["one_file_chunks"] = emb.calls - calls0
        f.unlink()
        report[f"index_{n}"] = res
        print(json.dumps({f"index_{n}": res}, indent=1), flush=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
