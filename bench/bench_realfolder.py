"""A real folder, read whole and clean: files read, junk chunks, sync time per file and word recall.

    python bench/bench_realfolder.py --label after                 # build/reuse the folder, sync it, report
    python bench/bench_realfolder.py --label before --folder DIR   # the same folder, with other code on PYTHONPATH

The folder (~200 files, built once, default <tmp>/minirag-realfolder) is made from Debian packages (`apt-get download`
+ `dpkg-deb -x`): the /usr/share/doc trees of coreutils, bash, grep, sed, tar, gzip, make, findutils, diffutils and
texinfo (READMEs, copyright files, compressed changelogs, example scripts), old-style HTML manuals (texinfo's
`makeinfo --html` pages, bash's reference manual as HTML and PDF, aptitude's DocBook pages, the Debian FAQ), man
pages, and the office fixtures under tests/data. Files are grouped by type (the extension, `.gz` kept; `noext`; `man`;
`office` for the fixtures);
each group is synced by the CLI (`minirag-mcp sync --json`) into its own index, so the time per file of a group is
its own (model load included, the same before and after). OCR is off (RAG_OCR_MIN_CHARS_PER_PAGE=0).

Reported per group and overall: files read (sources in the index / files in the folder), junk chunks, sync seconds
per file, and word recall against an independent extractor where one exists. A junk chunk is one whose body (the
text after its title/breadcrumb prefix; a heading chunk's body is its heading) has fewer than 12 letters, except a
table chunk that carries its table's name (in its context line) and column names (its repeated header row): the
figures of a sheet are its content, found by those (`junk_strict` counts every chunk whose body has under 12 letters;
`junk_indexed` every chunk whose indexed text — context line and body, what the model and the keyword index read —
has under 12). The
extractors: the file itself (text), `zcat` (`.gz` text), `man --nh --nj -l` (man pages: no hyphenation or
justification, which cut words in two at line ends; its header and footer lines, the page furniture it adds, left
out), `pdftotext` (PDF), `pandoc -t plain` (HTML). Recall is the share of the reference's distinct words (3+
letters, case-folded) found in the document as read back from its chunks (`rebuild_document`: section headings
once, as a caller reads them; they sit in each chunk's context line, so counting chunk bodies alone lost them).
Results are merged into bench/results/realfolder.json under --label.

--chunks-only converts and chunks each file in this process with the packaged tokenizer (no CLI, no embedding;
files of an extension the sync does not scan are not read): the same files-read, junk and recall figures, and the
conversion + chunking time per file, in minutes where a full sync of the folder takes most of an hour on a busy
two-core machine.

Chunks only, 186 files (labels before41/after41: the same folder and measure, before and after scripts read by
their bytes became code, a table's chunks were named, texinfo's ¶ anchors dropped and thin prose chunks rebalanced):

| type | files | chunks before → after | junk before → after | strict junk after | recall before → after |
|---|---|---|---|---|---|
| man | 20 | 1,368 → 1,368 | 3 → 1 | 1 | 0.9997 → 0.9997 |
| noext | 27 | 327 → 271 | 1 → 0 | 0 | 1.000 → 1.000 |
| noext.gz | 44 | 13,609 → 13,595 | 17 → 0 | 0 | 1.000 → 1.000 |
| txt.gz | 1 | 596 → 597 | 4 → 4 | 4 | 1.000 → 1.000 |
| sed, sh, t (source) | 3 | 125 → 83 | 38 → 1 | 1 | 1.000 → 1.000 |
| txt | 2 | 28 → 28 | 0 → 0 | 0 | 1.000 → 1.000 |
| html | 58 | 2,596 → 2,621 | 5 → 1 | 1 | 0.951 → 0.951 |
| office | 30 | 5,375 → 5,380 | 267 → 5 | 257 | 0.528 → 0.528 |
| pdf | 1 | 1,126 → 1,126 | 1 → 0 | 0 | 0.934 → 0.934 |
| all | 186 | 25,150 → 25,069 | 336 (1.34 %) → 12 (0.05 %) | 264 (1.05 %) | |

The strict count stays over 1 % because of one fixture: readr's challenge.csv, 2,000 rows of figures and dates under
the columns `x` and `y` (252 chunks, each now named `challenge` and opening on `| x | y |`). HTML recall misses the
navigation the reader drops on purpose (next, prev, home, contents, index and the neighbouring pages' titles in
DocBook/texinfo headers) and words pandoc's plain-text tables cut in two (bash's index tables). The 12 junk chunks
left are content: sheets whose first row is figures (pythagoras.ods, two of Formate.xls), a slide that is only its
title (one deck, as .odp and .ppt), `SEE ALSO make(1)`, one-line commands under their heading (four of sedfaq's
`sed G file`, bash's `[n]>[|]word`, a line of dc.sed). Times per file are not paired (the runs shared the machine
with other jobs).

A table cut into chunks names in each chunk's context line the rows it holds (labels before-rows/after-rows, a folder
rebuilt later from the archive's packages then: 148 files, fewer HTML pages). What the model and the keyword index
read: chunks under 12 letters 253 of 20,686 (1.22 %) → 3 of 20,721 (0.01 %); by the table rule 13 → 13; the strict
body count 265 → 269 (1.3 %: challenge.csv's bodies are figures under `| x | y |`, as before). Converting and
chunking the folder's HTML and office files: after/before 1.02 wall, 0.98 CPU (6 paired runs).
"""

import argparse, gzip, json, os, re, shutil, subprocess, sys, tempfile, time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ["coreutils", "bash", "bash-doc", "grep", "sed", "tar", "gzip", "make", "findutils", "diffutils",
            "texinfo", "aptitude-doc-en", "debian-faq"]
DOC_TREES = ["coreutils", "bash", "grep", "sed", "tar", "gzip", "make", "findutils", "diffutils"]
JUNK_LETTERS = 12
WORD = re.compile(r"[^\W\d_]{3,}")


def _every(files: list, n: int) -> list:
    "n files spread evenly over a sorted list."
    files = sorted(files)
    step = max(1, len(files) // n)
    return files[::step][:n]


def _place(src: Path, folder: Path, rel: str):
    dest = folder / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def build_folder(folder: Path):
    "Download the packages, unpack them and copy ~200 of their files (plus the office fixtures) into `folder`."
    debs = folder.parent / (folder.name + "-debs")
    x = debs / "x"
    if not x.exists():
        debs.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True, capture_output=True)
        for d in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(d), str(x)], check=True)
    doc = x / "usr/share/doc"
    for pkg in DOC_TREES:
        files = [p for p in (doc / pkg).rglob("*") if p.is_file() and p.suffix not in (".html", ".pdf")]
        for p in _every(files, 12):
            _place(p, folder, f"doc/{pkg}/{p.relative_to(doc / pkg)}")
    for name in ("bashref.html", "bashref.pdf"):  # bash's reference manual, texinfo's HTML and its printed book
        _place(doc / "bash" / name, folder, f"manuals/bash/{name}")
    for sub, pattern, n in [("texinfo", "**/*.html", 30), ("aptitude/html/en", "*.html", 15),
                            ("debian/FAQ", "*.en.html", 12)]:
        for p in _every(list((doc / sub).glob(pattern)), n):
            _place(p, folder, f"manuals/{sub.split('/')[0]}/{p.name}")
    for p in _every([p for p in (x / "usr/share/man").rglob("*") if p.is_file()], 20):
        _place(p, folder, f"man/{p.name}")
    for sub in ("office", "fidelity"):
        for p in sorted((REPO / "tests/data" / sub).iterdir()):
            if p.is_file() and p.suffix not in (".md",):
                _place(p, folder, f"office/{sub}/{p.name}")


def file_type(p: Path) -> str:
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    ext = Path(name).suffix.lower().lstrip(".")
    ext = ext if ext and len(ext) <= 5 and ext.isalnum() and not ext.isdigit() else ""
    if p.parent.name == "man":  # not tar's changelog.1.gz: plain text, read as text, whatever `man -l` makes of it
        return "man"
    if "office" in p.parts:
        return "office"
    return (ext or "noext") + (".gz" if p.name.endswith(".gz") else "")


def reference_text(p: Path, kind: str) -> str | None:
    "The file's words by a tool independent of minirag, or None when there is none for its type."
    def run(cmd, **kw):
        r = subprocess.run(cmd, capture_output=True, timeout=120, **kw)
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None

    if kind == "man":  # no hyphenation or justification (a word cut at a line end is two non-words); body text only
        env = {**os.environ, "MANWIDTH": "2000", "MAN_KEEP_FORMATTING": ""}
        page = run(["man", "--nh", "--nj", "-l", str(p)], env=env)
        lines = [l for l in (page or "").splitlines() if l.strip()]
        return "\n".join(lines[1:-1]) if page is not None else None  # less the header and footer line
    if kind == "pdf":
        return run(["pdftotext", "-layout", str(p), "-"])
    if kind in ("html", "htm"):
        return run(["pandoc", "-f", "html", "-t", "plain", str(p)])
    raw = gzip.open(p).read() if p.name.endswith(".gz") else p.read_bytes()
    if b"\0" in raw[:8192] or kind in ("doc", "xls", "ppt", "docx", "xlsx", "pptx", "odt", "ods", "odp", "msg",
                                       "epub", "ipynb"):
        return None
    return raw.decode("utf-8", "replace")


def words(text: str) -> set:
    return {w.casefold() for w in WORD.findall(text or "")}


def sync_group(files: list, folder: Path, work: Path, kind: str, model: Path) -> dict:
    "Copy one group's files into their own root, sync it with the CLI, and read back its sources and chunks."
    root, db = work / kind / "docs", work / kind / "idx"
    for p in files:
        _place(p, root, str(p.relative_to(folder)))
    env = {**os.environ, "BASE_DIR": str(root), "DB_PATH": str(db), "MODEL_NAME": str(model),
           "CACHE_DIR": str(model.parent), "RAG_OCR_MIN_CHARS_PER_PAGE": "0"}
    t = time.perf_counter()
    r = subprocess.run(["minirag-mcp", "sync", "--json"], env=env, capture_output=True, timeout=3600)
    seconds = time.perf_counter() - t
    from minirag.api import Index

    ix = Index.open(root, db_path=db, model_name=str(model), cache_dir=model.parent)
    from minirag.chunk import rebuild_document

    got, docs = {}, {}
    for s in ix.engine.tables.sources():
        chunks = ix.engine.tables.chunks_of(s["source"])
        rel = Path(s["source"]).resolve().relative_to(root.resolve())
        got[rel] = [(c["text"] if c["kind"] == "heading" else c["text"][c["prefix_len"] :], c["kind"],
                     c["text"][: c["prefix_len"]]) for c in chunks]  # fmt: skip
        docs[rel] = rebuild_document(chunks)
    ix.close()
    return dict(seconds=seconds, exit=r.returncode, root=root, got=got, docs=docs)


def chunk_group(files: list, folder: Path, work: Path, kind: str, model: Path) -> dict:
    "Convert and chunk one group's files in this process (no embedding): what a sync would index, and how fast."
    import minirag
    from minirag.config import load_config
    from minirag.formats import convert
    from minirag.formats.convert import convert_file, file_title, scanned_exts
    from minirag.chunk import chunk_markdown, rebuild_document
    from minirag.tokens import TokenCounter

    count = TokenCounter(Path(minirag.__file__).parent / "assets/all-MiniLM-L6-v2/tokenizer.json").count
    cfg = load_config({"BASE_DIR": str(folder), "RAG_OCR_MIN_CHARS_PER_PAGE": "0"})
    got, docs, t = {}, {}, time.perf_counter()
    # a file of no listed type is read when its bytes are text, where this code has that judge (as the scan does)
    judge = convert.read_by_content(cfg) if hasattr(convert, "read_by_content") else lambda p: ""
    for p in files:
        if p.suffix.lower() not in scanned_exts() and judge(p) is not None:
            continue
        try:
            c = convert_file(p, cfg)
        except Exception:
            continue
        title = file_title(c.meta_title, c.markdown, p)
        chunks = chunk_markdown(c.markdown, count, 110, title).chunks
        got[p.relative_to(folder)] = [(c.text if c.kind == "heading" else c.body, c.kind, c.text[: c.prefix_len])
                                      for c in chunks]  # fmt: skip
        docs[p.relative_to(folder)] = rebuild_document(chunks)
    return dict(seconds=time.perf_counter() - t, exit=0, root=folder, got=got, docs=docs)


def letters(s: str) -> int:
    return sum(c.isalpha() for c in s)


def is_junk(body: str, kind: str, prefix: str) -> bool:
    "Under 12 letters, unless a table chunk carrying its table's name and its column names: figures are its content."
    if letters(body) >= JUNK_LETTERS:
        return False
    return not (kind == "table" and letters(prefix) and letters(body.split("\n", 1)[0]))


def measure(folder: Path, work: Path, chunks_only: bool = False) -> dict:
    "Sync each type group of `folder`; return the per-group and overall figures."
    from minirag.embed import packaged_model_dir

    model = packaged_model_dir(work / "models")
    groups = defaultdict(list)
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            groups[file_type(p)].append(p)
    rows, junk_examples = {}, []
    for kind, files in sorted(groups.items()):
        g = (chunk_group if chunks_only else sync_group)(files, folder, work, kind, model)
        bodies = [c for chunks in g["got"].values() for c in chunks]
        junk = [b for b, k, pre in bodies if is_junk(b, k, pre)]
        strict = sum(letters(b) < JUNK_LETTERS for b, _, _ in bodies)
        indexed = sum(letters(b if k == "heading" else pre + b) < JUNK_LETTERS for b, k, pre in bodies)
        junk_examples += [f"{kind}: {b[:60]!r}" for b in junk[:3]]
        recalls = []
        for p in files:
            rel = p.relative_to(folder)
            ref = reference_text(p, kind) if rel in g["got"] else None
            if ref is not None and (want := words(ref)):
                recalls.append(len(want & words(g["docs"][rel])) / len(want))
        rows[kind] = dict(files=len(files), read=len(g["got"]), chunks=len(bodies), junk=len(junk), junk_strict=strict,
                          junk_indexed=indexed,
                          seconds=round(g["seconds"], 2), s_per_file=round(g["seconds"] / len(files), 3),
                          recall=round(sum(recalls) / len(recalls), 4) if recalls else None,
                          recall_files=len(recalls))
    keys = ("files", "read", "chunks", "junk", "junk_strict", "junk_indexed", "seconds")
    tot = {k: sum(r[k] for r in rows.values()) for k in keys}
    tot["read_share"] = round(tot["read"] / tot["files"], 4)
    tot["junk_share"] = round(tot["junk"] / max(tot["chunks"], 1), 4)
    tot["junk_strict_share"] = round(tot["junk_strict"] / max(tot["chunks"], 1), 4)
    tot["junk_indexed_share"] = round(tot["junk_indexed"] / max(tot["chunks"], 1), 4)
    tot["s_per_file"] = round(tot["seconds"] / tot["files"], 3)
    return dict(total=tot, groups=rows, junk_examples=junk_examples[:40])


def report(label: str, res: dict):
    print(f"{label}: {res['total']}")
    print(f"{'type':<10}{'files':>6}{'read':>6}{'chunks':>8}{'junk':>6}{'strict':>7}{'indexed':>8}{'s/file':>8}{'recall':>8}")
    for kind, r in res["groups"].items():
        rec = "" if r["recall"] is None else f"{r['recall']:.3f}"
        cols = f"{r['files']:>6}{r['read']:>6}{r['chunks']:>8}{r['junk']:>6}{r.get('junk_strict', ''):>7}"
        cols += f"{r.get('junk_indexed', ''):>8}"
        print(f"{kind:<10}{cols}{r['s_per_file']:>8.3f}{rec:>8}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="after", help="key of this run in the results file (before, after, ...)")
    ap.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "minirag-realfolder",
                    help="the folder to build (once) and sync")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/realfolder.json")
    ap.add_argument("--chunks-only", action="store_true",
                    help="convert and chunk in this process, no CLI sync and no embedding (minutes, not an hour)")
    a = ap.parse_args(argv)
    if not a.folder.exists():
        build_folder(a.folder)
    work = Path(tempfile.mkdtemp(prefix="bench-realfolder-"))
    try:
        res = measure(a.folder, work, a.chunks_only)
        res["mode"] = "convert+chunk" if a.chunks_only else "cli sync"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(a.label, res)
    old = json.loads(a.out.read_text()) if a.out.exists() else {}
    old[a.label] = res
    a.out.write_text(json.dumps(old, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
