"""Growth curve: query latency, memory and index size at 10k, 100k and 1M chunks, in one run.

    python bench/bench_scale.py              # build what is missing, measure 10k,100k,1M, write results/scale.json
    python bench/bench_scale.py --build && python bench/bench_scale.py
                                             # as committed: file sizes of freshly built indexes (each measurement
                                             # ingests and deletes one file, which leaves DuckDB free blocks)
    python bench/bench_scale.py --build --sizes 1000000  # only build (bulk Arrow inserts)
    python bench/bench_scale.py --sizes 100000 --no-json # measure one size, print only
    python bench/bench_scale.py --clean                  # delete the built indexes

The indexes are synthetic but made of real rows: chunk texts are real passages cut from the eval corpora, their
keyword postings are computed by the same tokenizer and stemmer as ingest, and every vector is a mixture of real
embeddings of those passages plus noise (so neighbourhoods look like real data). Sources hold 25 chunks each and sit in
100 folders `part00`..`part99` (a folder is 1 % of the sources). Each size is measured in a fresh process, so the
resident memory is that of a querying process (the MCP server or a CLI call).
"""

import argparse, json, os, random, shutil, statistics, subprocess, sys, tempfile, time
from collections import Counter
from pathlib import Path
import numpy as np, pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from evaldir import add_eval_arg, checked

PER_SOURCE, PARTS, POOL = 25, 100, 1500


def load():
    return os.getloadavg()[0]


def ms(x):
    return round(1000 * x, 1)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def rss_mb():
    f = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    return round(int(f["VmRSS"].split()[0]) / 1024), round(int(f["VmHWM"].split()[0]) / 1024)


def passages(eval_dir: Path, n: int, seed=0) -> list[str]:
    "Real ~60-word passages cut from the eval corpora."
    out = []
    for s in ["debdesc-en", "pyfaq-en", "debfaq-en", "debfaq-ru"]:
        for line in open(eval_dir / s / "corpus.jsonl", encoding="utf-8"):
            words = json.loads(line)["text"].split()
            out += [p for p in (" ".join(words[i : i + 60]) for i in range(0, len(words), 60)) if len(p) > 120]
    random.Random(seed).shuffle(out)
    return out[:n]


def questions(eval_dir: Path, n: int) -> list[str]:
    "Real questions of the eval sets (question-length queries, as an agent asks)."
    qs = [
        json.loads(l)["text"]
        for s in ["debfaq-en", "pyfaq-en", "debdesc-en"]
        for l in open(eval_dir / s / "queries.jsonl", encoding="utf-8")
    ]
    random.Random(1).shuffle(qs)
    return qs[:n]


def model_and_pool(work: Path, eval_dir: Path):
    "The packaged model's directory, the passage pool and its real embeddings (cached in `work`)."
    from minirag.embed import Embedder, packaged_model_dir

    model = packaged_model_dir(work / "models")
    cache = work / f"pool-{POOL}.npz"
    texts = passages(eval_dir, POOL)
    if cache.exists():
        vecs = np.load(cache)["vecs"]
    else:
        vecs = Embedder(str(model), work / "models").embed(texts)
        np.savez(cache, vecs=vecs)
    return model, texts, vecs


def build(db_dir: Path, n: int, model: Path, texts: list[str], base: np.ndarray, seed=0):
    "Write an index of `n` chunks with bulk Arrow inserts: chunks, sources and postings clustered by term."
    from minirag.embed import Embedder
    from minirag.keywords import raw_terms, STEM_SQL
    from minirag.store import Store, connect
    from minirag.tables import (
        Tables,
        check_model as ensure_model,
        _set_meta as set_meta,
        ensure_input_keys,
    )  # raw bulk load

    t0 = time.perf_counter()
    if db_dir.exists():
        shutil.rmtree(db_dir)
    emb = Embedder(str(model), db_dir.parent / "models")
    store = Store(db_dir / "index.duckdb")
    root = str(db_dir / "docs")
    rng = np.random.default_rng(seed)
    # per passage: stemmed term frequencies (the same tokenizer and stemmer as ingest) and kw_len
    raw = [raw_terms(t) for t in texts]
    con = connect(":memory:")
    pairs = sorted({p for r in raw for p in r})
    con.register("_t", pa.table({"term": [t for t, _ in pairs], "lang": [l for _, l in pairs]}))
    stems = dict(zip(pairs, (r[0] for r in con.execute(f"SELECT {STEM_SQL} FROM _t").fetchall())))
    con.close()
    tfs = [Counter(stems[p] for p in r) for r in raw]
    kw_len = np.array([len(r) for r in raw], np.int32)
    main = rng.integers(0, len(texts), n)  # the passage (text) of each chunk; its vector leans on that passage's
    other = rng.integers(0, len(texts), n)
    ids = np.arange(1, n + 1, dtype=np.int64)
    n_src = (n + PER_SOURCE - 1) // PER_SOURCE
    src_names = [f"{root}/part{s * PARTS // n_src:02d}/doc{s:07d}.md" for s in range(n_src)]
    text_arr = pa.array(texts)
    with store.transaction() as c:
        c.execute(
            "SET memory_limit = '2GB'"
        )  # one big transaction: let DuckDB spill rather than grow (6.4 GB RSS without)
        ensure_model(c, emb.model_id, base.shape[1])
        B = 50_000
        for lo in range(0, n, B):
            hi = min(n, lo + B)
            m = hi - lo
            v = (
                base[main[lo:hi]]
                + 0.5 * base[other[lo:hi]]
                + 0.05 * rng.standard_normal((m, base.shape[1]), dtype=np.float32)
            )
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            i = np.arange(lo, hi)
            tbl = pa.table(
                {
                    "id": ids[lo:hi],
                    "source": pa.array([src_names[j // PER_SOURCE] for j in i]),
                    "chunk_index": pa.array(i % PER_SOURCE, pa.int32()),
                    "parent_id": pa.array([str(x) for x in (i % PER_SOURCE) // 4]),
                    "text": text_arr.take(pa.array(main[lo:hi])),
                    "prefix_len": pa.array(np.zeros(m, np.int32)),
                    "section_head": pa.array([""] * m),
                    "kind": pa.array(["text"] * m),
                    "tokens": pa.array(np.full(m, 100, np.int32)),
                    "scheme": pa.array(np.ones(m, np.int32)),
                    "kw_len": pa.array(kw_len[main[lo:hi]]),
                    "emb": pa.FixedSizeListArray.from_arrays(pa.array(v.astype(np.float32).ravel()), base.shape[1]),
                }
            )
            c.register("_b", tbl)
            c.execute("INSERT INTO chunks BY NAME SELECT * FROM _b")
            c.unregister("_b")
        counts = np.bincount(np.arange(n) // PER_SOURCE)
        c.register(
            "_s",
            pa.table(
                {
                    "source": src_names,
                    "kind": ["file"] * n_src,
                    "root": [root] * n_src,
                    "title": [f"Document {s}" for s in range(n_src)],
                    "category": [""] * n_src,
                    "content_hash": [f"{s:064x}" for s in range(n_src)],
                    "size": pa.array(np.full(n_src, 4000), pa.int64()),
                    "mtime": pa.array(np.zeros(n_src)),
                    "ocr_engine": [""] * n_src,
                    "chunk_count": pa.array(counts.astype(np.int32)),
                    "scheme": pa.array(np.ones(n_src, np.int32)),
                    "date_source": [""]
                    * n_src,  # looked for, none found: as an ingest leaves it (NULL asks a backfill)
                }
            ),
        )
        c.execute("INSERT INTO sources BY NAME SELECT *, now() AS ingested_at FROM _s")
        c.unregister("_s")
        # postings written already clustered by term (as Tables.maintain leaves them): term-major order
        order = np.argsort(main, kind="stable")
        starts = np.searchsorted(main[order], np.arange(len(texts) + 1))
        by_term: dict[str, list[tuple[int, int]]] = {}
        for p, tf in enumerate(tfs):
            for t, f in tf.items():
                by_term.setdefault(t, []).append((p, f))
        buf_t, buf_i, buf_f, rows = [], [], [], 0

        def flush():
            nonlocal buf_t, buf_i, buf_f
            if not buf_i:
                return
            c.register(
                "_p",
                pa.table(
                    {
                        "term": pa.DictionaryArray.from_arrays(
                            pa.array(np.concatenate(buf_t).astype(np.int32)), pa.array(terms_sorted)
                        ),
                        "chunk_id": np.concatenate(buf_i),
                        "tf": np.concatenate(buf_f).astype(np.int32),
                    }
                ),
            )
            c.execute("INSERT INTO postings SELECT term::VARCHAR, chunk_id, tf FROM _p")
            c.unregister("_p")
            buf_t, buf_i, buf_f = [], [], []

        terms_sorted = sorted(by_term)
        pending = 0
        for ti, t in enumerate(terms_sorted):
            segs = [(ids[order[starts[p] : starts[p + 1]]], f) for p, f in by_term[t]]
            cid = np.concatenate([s for s, _ in segs])
            tf = np.concatenate([np.full(len(s), f) for s, f in segs])
            o = np.argsort(cid)
            buf_i.append(cid[o])
            buf_f.append(tf[o])
            buf_t.append(np.full(len(cid), ti))
            pending += len(cid)
            rows += len(cid)
            if pending > 4_000_000:
                flush()
                pending = 0
        flush()
        set_meta(c, generation=1, postings_clustered=rows)
        ensure_input_keys(c)  # each chunk's encoder-input key, as ingest writes it (else the first write fills them)
    Tables(store).ensure_lookups()  # as the end of a sync builds them
    store.close()
    return dict(
        chunks=n, sources=n_src, postings=rows, build_s=round(time.perf_counter() - t0, 1), load=round(load(), 2)
    )


def dir_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def exact_top(con, qvecs: np.ndarray, k: int, prefix: str | None = None, doc_context: float = 0.0) -> list[list[int]]:
    "Exact top-k ids for each query (ties by id): float32 similarities of every row, streamed in batches."
    ids, srcs, cidx, sims = [], [], [], []
    con.execute("SELECT id, source, chunk_index, emb FROM chunks")
    for b in con.to_arrow_reader(16384):
        mat = b.column(3).values.to_numpy(zero_copy_only=False).reshape(len(b), -1)
        ids.append(b.column(0).to_numpy())
        srcs += b.column(1).to_pylist()
        cidx.append(b.column(2).to_numpy())
        sims.append(qvecs @ mat.T)
    ids, cidx, sim = np.concatenate(ids), np.concatenate(cidx), np.concatenate(sims, axis=1)
    codes = np.unique(np.array(srcs, dtype=object), return_inverse=True)[1]
    if doc_context:
        order = np.lexsort((cidx, codes))
        first = order[np.r_[True, codes[order][1:] != codes[order][:-1]]]
        head = np.empty(codes.max() + 1, np.int64)
        head[codes[first]] = first
        sim = (1 - doc_context) * sim + doc_context * sim[:, head[codes]]
    if prefix is not None:
        sim[:, ~np.array([s.startswith(prefix) for s in srcs])] = -np.inf
    return [[int(ids[i]) for i in np.lexsort((ids, -row))[:k]] for row in sim]


# the console script installed beside this interpreter, as a venv runs it (a pyenv shim on PATH adds ~50 ms of bash)
CLI = (
    str(Path(sys.executable).parent / "minirag-mcp")
    if (Path(sys.executable).parent / "minirag-mcp").exists()
    else "minirag-mcp"
)


def compiled():
    """Byte-compile the package as an install does: with PYTHONDONTWRITEBYTECODE set (as on these machines) a checkout
    would recompile every changed module in each CLI process, 0.1-0.4 s that no installed copy pays."""
    import compileall
    import minirag

    compileall.compile_dir(Path(minirag.__file__).parent, quiet=1)


def measure(db_dir: Path, n: int, model: Path, queries: list[str], texts: list[str], cli_runs: int = 9) -> dict:
    "Latency, memory and recall of a querying process on the index in `db_dir` (run in a fresh process)."
    from minirag.api import Index
    from minirag.wire import to_wire
    from minirag.search import vector_search, DOC_CONTEXT

    root = db_dir / "docs"
    root.mkdir(exist_ok=True)
    scope = f"{root}/part37"
    snap = (
        db_dir / "index.vectors"
    )  # the one-shot CLI's vector snapshot (06a1_snapshot): measured below, not part of the index
    if snap.exists():
        snap.unlink()
    out = dict(chunks=n, index_mb=round(dir_bytes(db_dir) / 2**20), load_start=round(load(), 2))
    t = time.perf_counter()
    ix = Index.open(
        root, db_path=db_dir, model_name=str(model), cache_dir=db_dir.parent / "models", idle_close=0.5
    )  # as the server holds it
    r = to_wire(ix.query(queries[0], 8))
    out["first_query_s"] = round(time.perf_counter() - t, 2)
    assert r["results"], "the index answers"

    def lat(fn, qs):
        ts = []
        for q in qs:
            t = time.perf_counter()
            fn(q)
            ts.append(time.perf_counter() - t)
        return dict(p50_ms=ms(statistics.median(ts)), p95_ms=ms(pct(ts, 0.95)))

    qs = queries[1:]
    out["hybrid"] = lat(lambda q: ix.query(q, 8), qs)
    out["hybrid_scoped_1pct"] = lat(lambda q: ix.query(q, 8, scope), qs)
    out["rss_mb"], out["peak_rss_mb"] = rss_mb()
    out["load_after_queries"] = round(load(), 2)
    emb = ix.engine.embedder
    qvecs = np.stack([emb.embed_query(q) for q in qs]).astype(np.float32)
    key = str(ix.store.db_file)
    with ix.store.session() as con:
        out["vector"] = lat(lambda i: vector_search(con, key, qvecs[i], 40), range(len(qs)))
        out["vector_scoped_1pct"] = lat(lambda i: vector_search(con, key, qvecs[i], 40, scope), range(len(qs)))
        rec = lambda a, b: round(float(np.mean([len(set(x) & set(y)) / max(len(y), 1) for x, y in zip(a, b)])), 4)
        exact_plain = exact_top(con, qvecs, 10)  # also the truth for the snapshot a server leaves (below)
        for name, c in (
            ("", 0.0),
            ("_doc_context", DOC_CONTEXT),
        ):  # plain nearest chunks, and as hybrid_query ranks them
            got = [[i for i, _ in vector_search(con, key, v, 10, None, c)] for v in qvecs]
            got_s = [[i for i, _ in vector_search(con, key, v, 10, scope, c)] for v in qvecs]
            out[f"vector_recall_at_10{name}"] = rec(got, exact_plain if not c else exact_top(con, qvecs, 10, None, c))
            out[f"vector_recall_at_10_scoped{name}"] = rec(got_s, exact_top(con, qvecs, 10, scope + "/", c))
    # one new file into the big index: convert, chunk, embed, write
    f = root / "part37" / "zz-new.md"
    f.parent.mkdir(exist_ok=True)
    f.write_text("# New note\n\n" + "\n\n".join(texts[:10]))
    t = time.perf_counter()
    ix.ingest(f)
    out["one_file_ingest_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    ix.query(qs[0], 8)
    out["query_after_write_ms"] = ms(time.perf_counter() - t)
    ix.engine.tables.delete(str(f))
    f.unlink()
    out["batch_ingest"] = batch_ingest(ix, root, texts)
    ix.close()
    env = dict(
        os.environ,
        DB_PATH=str(db_dir),
        MODEL_NAME=str(model),
        CACHE_DIR=str(db_dir.parent / "models"),
        BASE_DIR=str(root),
    )

    def cli(*args):
        t = time.perf_counter()
        p = subprocess.run([CLI, *args], env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-500:]
        return time.perf_counter() - t

    if snap.exists():  # the holding process above left one (a server keeps it current)
        snap.unlink()
    out["cli_first_no_snapshot_s"] = round(
        cli("query", qs[0], "--top-k", "8"), 2
    )  # up to 200k chunks: loads all, saves index.vectors
    out["cli_one_shot_s"] = round(statistics.median([cli("query", q, "--top-k", "8") for q in qs[1 : cli_runs + 1]]), 2)
    out["snapshot_mb"] = round(snap.stat().st_size / 2**20) if snap.exists() else 0
    f = root / "part37" / "zz-cli.md"
    f.write_text("# CLI note\n\n" + "\n\n".join(texts[20:30]))
    cli(
        "ingest", str(f)
    )  # another process writes one file: the next query refreshes the snapshot (that file's rows only)
    out["cli_after_one_file_write_s"] = round(cli("query", qs[1], "--top-k", "8"), 2)
    cli("delete", str(f))
    f.unlink()
    # a process that keeps its matrix (the MCP server): start → first answer, with no snapshot and with a current one
    if snap.exists():
        snap.unlink()
    out["server_first_answer_no_snapshot_s"] = round(held_first_answer(env, root, qs[2]), 2)
    cli("query", qs[4], "--top-k", "8")  # a one-shot process leaves the snapshot (a server's thread may not finish)
    out["server_first_answer_s"] = round(held_first_answer(env, root, qs[3]), 2)
    # what a one-shot process reads after a server ran (above COMPACT_ABOVE: the compact snapshot it left)
    out["cli_one_shot_after_server_s"] = round(
        statistics.median([cli("query", q, "--top-k", "8") for q in qs[5 : cli_runs + 5]]), 2
    )
    out["cli_after_write_over_steady"] = round(out["cli_after_one_file_write_s"] / out["cli_one_shot_s"], 2)
    out["snapshot_after_server_mb"] = (
        round(snap.stat().st_blocks * 512 / 2**20) if snap.exists() else 0
    )  # on disk: its room is a hole
    out["snapshot_recall_at_10"] = snapshot_recall(snap, qvecs, exact_plain)
    # a one-file write with that snapshot beside the index: its rows go into the snapshot's room, not a rewrite
    f = root / "part37" / "zz-cli2.md"
    f.write_text("# CLI note two\n\n" + "\n\n".join(texts[30:40]))
    cli("ingest", str(f))
    out["cli_after_one_file_write_with_snapshot_s"] = round(cli("query", qs[cli_runs + 6], "--top-k", "8"), 2)
    cli("delete", str(f))
    f.unlink()
    cli("query", qs[cli_runs + 7], "--top-k", "8")  # the snapshot follows the delete too
    out["resync_one_edited_file"] = resync_one_edited(db_dir, root, model, texts)
    out["load_end"] = round(load(), 2)
    return out


FIRST_ANSWER = """import sys, time
t = time.perf_counter()
from minirag.api import Index
from minirag.wire import to_wire
ix = Index.open(sys.argv[1], idle_close=0.5)
assert to_wire(ix.query(sys.argv[2], 8))["results"]
print("first_answer_s", time.perf_counter() - t, flush=True)
from minirag.vectors import held
for th in list(held._saving.values()):  # the snapshot it leaves for the next process
    th.join()
"""


def held_first_answer(env: dict, root: Path, q: str) -> float:
    "Seconds from a fresh holding process's start (imports included) to its first answer (as the MCP server)."
    p = subprocess.run(
        [sys.executable, "-c", FIRST_ANSWER, str(root), q],
        env=dict(env, MINIRAG_HOLD_VECTORS="1"),
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[-500:]
    w = p.stdout.split()  # DuckDB's progress bar may come before it
    return float(w[w.index("first_answer_s") + 1])


def snapshot_recall(snap: Path, qvecs: np.ndarray, exact: list[list[int]]) -> float | None:
    "Recall@10 against exact search of the snapshot beside the index, read as a one-shot process reads it."
    from minirag.vectors.snapshot import read

    vm = read(snap, qvecs.shape[1]) if snap.exists() else None
    if vm is None:
        return None
    got = [[i for i, _ in vm.search(v, 10)] for v in qvecs]
    return round(float(np.mean([len(set(x) & set(y)) / max(len(y), 1) for x, y in zip(got, exact)])), 4)


def resync_one_edited(db_dir: Path, root: Path, model: Path, texts: list[str]) -> dict:
    "A file of 10 passages in the big index, one paragraph edited, then a sync of that file: time and chunks embedded."
    from minirag.api import Index
    from minirag.wire import to_wire

    ix = Index.open(root, db_path=db_dir, model_name=str(model), cache_dir=db_dir.parent / "models")
    f = root / "part37" / "zz-edit.md"
    f.write_text("# Edited note\n\n" + "\n\n".join(f"## Part {i}\n\n{t}" for i, t in enumerate(texts[40:50])))
    ix.ingest(f)
    f.write_text(f.read_text().replace(texts[45], texts[45] + " One sentence added."))
    emb = ix.engine.embedder
    calls = emb.calls
    t = time.perf_counter()
    r = to_wire(ix.sync(f))
    dt = time.perf_counter() - t
    assert r["ingested"] == 1, r
    n = ix.engine.tables.counts()["chunks"]
    out = dict(seconds=round(dt, 2), embedded=emb.calls - calls, chunks=len(ix.engine.tables.chunks_of(str(f))))
    ix.engine.tables.delete(str(f))
    f.unlink()
    ix.close()
    assert n > 0
    return out


def batch_ingest(ix, root: Path, texts: list[str], files: int = 40, per_file: int = 12) -> dict:
    "A batch of new files into the big index (convert, chunk, embed, write) vs the bare embedder on the same texts."
    from minirag.api import ingest_paths
    from minirag.wire import to_wire

    d = root / "part38" / "zz-batch"
    d.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (d / f"note{i:02d}.md").write_text(
            f"# Batch note {i}\n\n" + "\n\n".join(texts[100 + i * per_file : 100 + (i + 1) * per_file])
        )
    before = ix.engine.embedder.calls
    t = time.perf_counter()
    r = to_wire(ingest_paths(ix, [d]))
    dt = time.perf_counter() - t
    embedded = ix.engine.embedder.calls - before  # fewer than the chunks when some were already in the index
    assert r["ingested"] == files and not r["failed"], r
    with ix.store.session() as con:
        chunks = [
            x for (x,) in con.execute("SELECT text FROM chunks WHERE starts_with(source, ?)", [str(d) + "/"]).fetchall()
        ]
    emb = ix.engine.embedder
    t = time.perf_counter()
    emb.embed(chunks)
    raw = time.perf_counter() - t
    for f in r["files"]:
        ix.engine.tables.delete(f)
    shutil.rmtree(d)
    return dict(
        files=files,
        chunks=len(chunks),
        ingest_s=round(dt, 2),
        chunks_per_s=round(len(chunks) / dt, 1),
        embedder_chunks_per_s=round(len(chunks) / raw, 1),
        share_of_embedder=round(raw / dt, 3),
        embedded=embedded,
    )


def vss_compare(db_dir: Path, queries: list[str], model: Path) -> dict:
    "DuckDB's vss HNSW on the same vectors: build time, query time, recall@10 against exact, insert rate, scoped top-k."
    from minirag.embed import Embedder
    from minirag.store import connect

    emb = Embedder(str(model), db_dir.parent / "models")
    qv = np.stack([emb.embed_query(q) for q in queries]).astype(np.float32)
    src = connect(db_dir / "index.duckdb", read_only=True, extensions=())
    ex = exact_top(src, qv, 10)
    tbl = src.execute("SELECT id, source, emb FROM chunks").arrow().read_all()
    src.close()
    h = connect(":memory:", extensions=("vss",))
    dim = qv.shape[1]
    h.register("t", tbl)
    h.execute(f"CREATE TABLE v AS SELECT id, source, emb::FLOAT[{dim}] AS emb FROM t")
    h.unregister("t")
    out = dict(chunks=len(tbl), load_start=round(load(), 2))
    t = time.perf_counter()
    h.execute("CREATE INDEX hn ON v USING HNSW(emb) WITH (metric='cosine')")
    out["hnsw_build_s"] = round(time.perf_counter() - t, 1)
    sql = f"SELECT id FROM v ORDER BY array_cosine_distance(emb, ?::FLOAT[{dim}]) LIMIT 10"
    for ef in (64, 200):
        h.execute(f"SET hnsw_ef_search = {ef}")
        ts, got = [], []
        for q in qv:
            t = time.perf_counter()
            got.append([r[0] for r in h.execute(sql, [q.tolist()]).fetchall()])
            ts.append(time.perf_counter() - t)
        out[f"ef{ef}"] = dict(
            p50_ms=ms(statistics.median(ts)),
            recall_at_10=round(float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got, ex)])), 4),
        )
    scope = str(db_dir / "docs" / "part37") + "/"
    out["scoped_rows_returned_of_10"] = statistics.median(
        len(
            h.execute(
                f"SELECT id FROM v WHERE starts_with(source, ?) "
                f"ORDER BY array_cosine_distance(emb, ?::FLOAT[{dim}]) LIMIT 10",
                [scope, q.tolist()],
            ).fetchall()
        )
        for q in qv
    )
    new = tbl.slice(0, 2000).set_column(0, "id", pa.array(np.arange(10**9, 10**9 + 2000, dtype=np.int64)))
    h.register("n", new)
    t = time.perf_counter()
    h.execute(f"INSERT INTO v SELECT id, source, emb::FLOAT[{dim}] FROM n")
    out["insert_rows_per_s_with_index"] = round(2000 / (time.perf_counter() - t))
    out["load_end"] = round(load(), 2)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated chunk counts")
    ap.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "minirag-scale",
        help="where the indexes are built (not the repo)",
    )
    ap.add_argument("--build", action="store_true", help="(re)build the indexes, then stop")
    ap.add_argument("--queries", type=int, default=60, help="warm queries per measurement")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    ap.add_argument("--no-json", action="store_true", help="print only")
    ap.add_argument("--clean", action="store_true", help="delete the built indexes and stop")
    ap.add_argument("--vss", type=int, metavar="N", help="compare DuckDB's vss HNSW on the N-chunk index, then stop")
    ap.add_argument("--measure", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this (fresh) process
    add_eval_arg(ap)
    a = ap.parse_args()
    if a.clean:
        shutil.rmtree(a.dir, ignore_errors=True)
        return
    ev = checked(a.eval_dir)
    a.dir.mkdir(parents=True, exist_ok=True)
    model, texts, base = model_and_pool(a.dir, ev)
    if a.vss:
        print(json.dumps(dict(vss=vss_compare(a.dir / f"n{a.vss}", questions(ev, a.queries), model))), flush=True)
        return
    if a.measure:
        print(
            json.dumps(measure(a.dir / f"n{a.measure}", a.measure, model, questions(ev, a.queries + 1), texts)),
            flush=True,
        )
        return
    sizes = [int(s) for s in a.sizes.split(",")]
    compiled()
    results = []
    for n in sizes:
        d = a.dir / f"n{n}"
        if a.build or not (d / "index.duckdb").exists():
            print(json.dumps(dict(built=build(d, n, model, texts, base))), flush=True)
        if a.build:
            continue
        p = subprocess.run(
            [
                sys.executable,
                __file__,
                "--measure",
                str(n),
                "--dir",
                str(a.dir),
                "--eval",
                str(ev),
                "--queries",
                str(a.queries),
            ],
            capture_output=True,
            text=True,
        )
        if p.returncode:
            sys.exit(f"measuring {n} chunks failed:\n{p.stderr[-2000:]}")
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        print(json.dumps(r), flush=True)
    if results and not a.no_json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(dict(machine=f"{os.cpu_count()} cores", sizes=results), indent=1) + "\n")
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
