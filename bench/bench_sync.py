"""Sync timings: no-change resync of 2,000 small files (goal < 1 s) and full-sync chunks/s vs the raw embedder on the
same chunk texts (goal >= 80%). Files are built from the eval sets' corpus.jsonl.
Run: python bench/bench_sync.py [N] [--eval DIR]   (default DIR: ../shared/eval beside the repo)"""

import argparse, json, os, tempfile, time
from pathlib import Path
from minirag.api import Index
from minirag.wire import to_wire
from minirag.embed import packaged_model_dir, Embedder
from evaldir import add_eval_arg, checked

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("n", nargs="?", type=int, default=2000, help="number of files to build (default 2000)")
add_eval_arg(ap)
args = ap.parse_args()
N, EVAL = args.n, checked(args.eval_dir)
docs = []
for f in sorted(EVAL.glob("*/corpus.jsonl")):
    for line in open(f, encoding="utf-8"):
        d = json.loads(line)
        docs.append(((d.get("title") or "").strip(), d["text"]))
        if len(docs) >= N:
            break
    if len(docs) >= N:
        break
while len(docs) < N:  # more files than the corpus has: copies, whose chunks are reused (reported below)
    docs += docs[: N - len(docs)]

tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="bench-sync-")))
root = tmp / "docs"
for i, (title, text) in enumerate(docs):
    p = root / f"d{i // 100:02}" / f"doc{i:05}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text((f"# {title}\n\n" if title else "") + text + "\n", encoding="utf-8")
model = packaged_model_dir(tmp / "models")
emb = Embedder(str(model), model.parent)
emb.embed(["warm up"])
ix = Index.open(root, db_path=tmp / "idx", model_name=str(model), cache_dir=model.parent, embedder=emb)

calls = emb.calls
t = time.perf_counter()
r = to_wire(ix.sync())
full = time.perf_counter() - t
chunks = to_wire(ix.status())["chunkCount"]
print(
    f"files {N}: full sync {full:.1f} s, {r['ingested']} ingested, {r['failed']} failed, {chunks} chunks "
    f"→ {chunks / full:.0f} chunks/s end to end; embedded {emb.calls - calls}, "
    f"reused {chunks - (emb.calls - calls)} (chunks whose encoder input was already there)"
)

texts = [c["text"] for s in ix.engine.tables.sources() for c in ix.engine.tables.chunks_of(s["source"])]
texts = list(dict.fromkeys(texts))  # each input once, as the sync embedded them: the share compares like with like
t = time.perf_counter()
emb.embed(texts)
raw = time.perf_counter() - t
print(
    f"raw embedder on the same {len(texts)} distinct chunk texts: {raw:.1f} s → {len(texts) / raw:.0f} chunks/s; "
    f"sync reaches {100 * raw / full:.0f}% of it (share_of_embedder {raw / full:.3f}; goal >= 80%)"
)

calls = emb.calls
times = []
for _ in range(3):
    t = time.perf_counter()
    r = to_wire(ix.sync())
    times.append(time.perf_counter() - t)
    assert r["skipped"] == N and emb.calls == calls, r
print(f"no-change resync of {N} files: best {min(times):.3f} s, median {sorted(times)[1]:.3f} s (goal < 1 s)")
for p in list(root.rglob("*.md"))[:200]:
    os.utime(p, (1, 1))
t = time.perf_counter()
r = to_wire(ix.sync())
touched = time.perf_counter() - t
print(f"resync after touching 200 files: {touched:.3f} s (hash 200, re-embed {emb.calls - calls})")
