"""Chunk-level reuse: what it saves and what its lookup costs. Paired runs, reuse off and on in turn, same code.

    python bench/bench_reuse.py lookup --index PATH/TO/n100000/index.duckdb  # copied, never modified
    python bench/bench_reuse.py pdf [--pdf FILE]      # re-ingest after a one-paragraph edit (default: the Debian FAQ)
    python bench/bench_reuse.py corpus [--docs DIR]   # a sync of a real corpus: chunks reused (default: copyright
                                                      # files of the installed Debian packages)

`lookup`: a batch of new files, nothing repeating, into a copy of a big index: the share of the bare embedder's rate
the ingest reaches with reuse off and on (the lookup may not cost what it saves), and the lookup alone per batch.
"""

import argparse, ctypes, json, shutil, statistics, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import minirag.ingest as mingest
from minirag.api import Index, ingest_paths
from minirag.embed import packaged_model_dir, Embedder
from minirag.wire import to_wire
from evaldir import add_eval_arg, checked

FAQ = ROOT / "tests" / "data" / "fidelity" / "debian-faq.en.pdf"


def model(tmp: Path):
    m = packaged_model_dir(Path(tempfile.gettempdir()) / "minirag-bench-models")
    e = Embedder(str(m), m.parent)
    e.embed(["warm up"])
    return m, e


def reuse(on: bool):
    mingest.Pipeline.reuse = on


def passages(n: int, eval_dir: Path) -> list[str]:
    out = []
    for f in sorted(checked(eval_dir).glob("*/corpus.jsonl")):
        for line in open(f, encoding="utf-8"):
            out.append(json.loads(line)["text"])
            if len(out) >= n:
                return out
    return out


def bench_lookup(a):
    tmp = Path(tempfile.mkdtemp(prefix="bench-reuse-"))
    db = tmp / "idx"
    db.mkdir()
    t = time.perf_counter()
    shutil.copy(a.index, db / "index.duckdb")
    print(f"copied {a.index} in {time.perf_counter() - t:.1f} s", flush=True)
    m, emb = model(tmp)
    root = tmp / "docs"
    root.mkdir()
    ix = Index.open(root, db_path=db, model_name=str(m), cache_dir=m.parent, embedder=emb, idle_close=0.5)
    n0 = ix.engine.tables.counts()["chunks"]
    texts = passages(a.files * a.per_file * (2 * a.pairs + 1), a.eval_dir)
    res = {True: [], False: []}
    k = 0
    for run in range(2 * a.pairs):
        on = run % 2 == 1  # off, on, off, on …
        d = root / f"batch{run}"
        d.mkdir()
        for i in range(a.files):  # a title of its own: every chunk's input (breadcrumb included) is new
            # a mark of its own on every passage: the big index was cut from the same corpora
            body = "\n\n".join(
                f"(b{run} n{i} p{j}) {' '.join(t.split())} (batch {run} note {i} part {j})"
                for j, t in enumerate(texts[k : k + a.per_file])
            )
            k += a.per_file
            (d / f"note{i:02d}.md").write_text(f"# Batch {run} note {i}\n\n{body}\n")
        reuse(on)
        calls = emb.calls
        t = time.perf_counter()
        r = to_wire(ingest_paths(ix, [d]))
        dt = time.perf_counter() - t
        assert r["ingested"] == a.files and not r["failed"], r
        with ix.store.session() as con:
            chunks = [
                x
                for (x,) in con.execute(
                    "SELECT text FROM chunks WHERE starts_with(source, ?)", [str(d) + "/"]
                ).fetchall()
            ]
        embedded = emb.calls - calls
        t = time.perf_counter()
        emb.embed(chunks)
        raw = time.perf_counter() - t
        res[on].append(raw / dt)
        print(
            f"run {run} reuse {'on ' if on else 'off'}: {len(chunks)} chunks in {dt:.2f} s, bare embedder "
            f"{raw:.2f} s → share {raw / dt:.3f}",
            flush=True,
        )
    # the lookup alone: 256 keys none of which is there, as one batch asks
    from minirag.tables import input_key

    keys = [input_key(f"absent {i}") for i in range(256)]
    ts = []
    for _ in range(10):
        ix.engine.tables._keys_filled = True
        t = time.perf_counter()
        ix.engine.tables.reusable_vectors(keys, [f"absent {i}" for i in range(256)], emb.model_id)
        ts.append(time.perf_counter() - t)
    ix.close()
    out = dict(
        index_chunks=n0,
        files=a.files,
        share_of_embedder_off=[round(x, 3) for x in res[False]],
        share_of_embedder_on=[round(x, 3) for x in res[True]],
        median_off=round(statistics.median(res[False]), 3),
        median_on=round(statistics.median(res[True]), 3),
        lookup_256_keys_ms=round(1000 * statistics.median(ts), 1),
    )
    print(json.dumps(out))
    shutil.rmtree(tmp)


def edit_pdf(src: Path, dst: Path, page: int):
    "Add one paragraph of text to one page of `src` (PDFium), saved as `dst`."
    import pypdfium2 as pdfium, pypdfium2.raw as raw

    pdf = pdfium.PdfDocument(str(src))
    pg = pdf[min(page, len(pdf) - 1)]
    font = raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    obj = raw.FPDFPageObj_CreateTextObj(pdf.raw, font, ctypes.c_float(10))
    buf = ctypes.create_string_buffer(
        "An added paragraph: the release team now freezes the archive two weeks earlier.\0".encode("utf-16-le")
    )
    raw.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(raw.FPDF_WCHAR)))
    raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 72, 60)
    raw.FPDFPage_InsertObject(pg.raw, obj)
    assert raw.FPDFPage_GenerateContent(pg.raw)
    pdf.save(str(dst))
    return len(pdf)


def bench_pdf(a):
    tmp = Path(tempfile.mkdtemp(prefix="bench-reuse-pdf-"))
    root = tmp / "docs"
    root.mkdir()
    m, emb = model(tmp)
    f = root / a.pdf.name
    shutil.copy(a.pdf, f)
    ix = Index.open(root, db_path=tmp / "idx", model_name=str(m), cache_dir=m.parent, embedder=emb)
    t = time.perf_counter()
    first = ix.ingest(f)
    print(f"{a.pdf.name}: {first.chunk_count} chunks, first ingest {time.perf_counter() - t:.1f} s", flush=True)
    ix.close()
    shutil.copytree(tmp / "idx", tmp / "idx-orig")
    orig = tmp / "orig.pdf"
    shutil.copy(f, orig)
    pages = edit_pdf(orig, tmp / "edited.pdf", a.page)
    res = {True: [], False: []}
    for run in range(2 * a.pairs):
        on = run % 2 == 1
        shutil.rmtree(tmp / "idx")
        shutil.copytree(tmp / "idx-orig", tmp / "idx")
        shutil.copy(tmp / "edited.pdf", f)
        ix = Index.open(root, db_path=tmp / "idx", model_name=str(m), cache_dir=m.parent, embedder=emb)
        reuse(on)
        calls = emb.calls
        t = time.perf_counter()
        r = ix.ingest(f)
        dt = time.perf_counter() - t
        ix.close()
        res[on].append((dt, emb.calls - calls, r.chunk_count))
        print(
            f"run {run} reuse {'on ' if on else 'off'}: re-ingest {dt:.2f} s, embedded {emb.calls - calls} of "
            f"{r.chunk_count} chunks",
            flush=True,
        )
    out = dict(
        pdf=a.pdf.name,
        pages=pages,
        chunks=res[True][0][2],
        reingest_s_off=round(statistics.median(x[0] for x in res[False]), 2),
        reingest_s_on=round(statistics.median(x[0] for x in res[True]), 2),
        embedded_off=res[False][0][1],
        embedded_on=res[True][0][1],
    )
    print(json.dumps(out))
    shutil.rmtree(tmp)


def bench_corpus(a):
    tmp = Path(tempfile.mkdtemp(prefix="bench-reuse-corpus-"))
    root = tmp / "docs"
    if a.docs:
        shutil.copytree(a.docs, root)
    else:  # real files with real repeats: the licence texts in the copyright files of installed packages
        for p in sorted(Path("/usr/share/doc").glob("*/copyright"))[: a.limit]:
            (root / p.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(p, root / p.parent.name / "copyright.txt")
    m, emb = model(tmp)
    reuse(True)
    ix = Index.open(root, db_path=tmp / "idx", model_name=str(m), cache_dir=m.parent, embedder=emb)
    calls = emb.calls
    t = time.perf_counter()
    r = to_wire(ix.sync())
    dt = time.perf_counter() - t
    n = ix.engine.tables.counts()["chunks"]
    ix.close()
    out = dict(
        files=r["ingested"],
        failed=r["failed"],
        chunks=n,
        embedded=emb.calls - calls,
        reused=n - (emb.calls - calls),
        reused_share=round(1 - (emb.calls - calls) / max(n, 1), 3),
        sync_s=round(dt, 1),
    )
    print(json.dumps(out))
    shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("lookup")
    p.add_argument("--index", type=Path, required=True, help="an index.duckdb to copy (it is not modified)")
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--per-file", type=int, default=12)
    p.add_argument("--pairs", type=int, default=2)
    add_eval_arg(p)
    p = sub.add_parser("pdf")
    p.add_argument("--pdf", type=Path, default=FAQ)
    p.add_argument("--page", type=int, default=20, help="the page that gets the added paragraph")
    p.add_argument("--pairs", type=int, default=2)
    p = sub.add_parser("corpus")
    p.add_argument("--docs", type=Path)
    p.add_argument("--limit", type=int, default=300, help="copyright files to take")
    a = ap.parse_args()
    dict(lookup=bench_lookup, pdf=bench_pdf, corpus=bench_corpus)[a.what](a)


if __name__ == "__main__":
    main()
