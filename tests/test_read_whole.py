"""A real folder, read whole: files known by their bytes (no extension, an unknown one, packed with gzip/bzip2/xz, man
pages, source code), and the hostile ones among them.

Hostile files go through the installed CLI as a subprocess, with a deadline and the child's peak memory measured: a
binary behind a text extension, a .gz that unpacks to 2 GB of zeros (written as ~2 MB of gzip members), a .gz of a
binary, a roff page that includes itself, a 50 MB line of "text", a script holding NUL bytes, a video named like
TypeScript. Each is read, or listed as failed or skipped with its reason; nothing prints a trace. Real Debian files
(copyright, README.Debian, packed changelogs and man pages from /usr/share/doc and /usr/share/man, present on a Debian
base system) are synced with the packaged model and read back; their words are compared with an independent
extractor's (zcat, `man -l`, the file itself)."""

import bz2
import gzip
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import said, write
from system_tools import reason as tool_reason, problem as tool_problem

CLI = str(Path(sys.executable).parent / "minirag-mcp")
ENV_VARS = ["BASE_DIR", "BASE_DIRS", "DB_PATH", "MAX_FILE_SIZE", "MAX_UNZIPPED_SIZE", "TEXT_EXTENSIONS"]
ENV_VARS += ["READ_UNKNOWN_TEXT"]


def env_for(root: Path, model_dir: Path, **extra) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return dict(e, BASE_DIR=str(root), DB_PATH=str(root.parent / "idx"), MODEL_NAME=str(model_dir),
                CACHE_DIR=str(model_dir.parent), **extra)  # fmt: skip


# runs a command and writes the peak memory (KiB) of it and what it waited for into a file: one sync's peak alone
PEAK = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[2:]).returncode\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(code)"
)


def sync(env: dict, deadline: float = 240, peak: Path | None = None) -> tuple[dict, subprocess.CompletedProcess, float]:
    "`minirag-mcp sync --json`: its report, the process, and its wall time; failed past `deadline` seconds."
    t = time.monotonic()
    cmd = [CLI, "sync", "--json"] if peak is None else [sys.executable, "-c", PEAK, str(peak), CLI, "sync", "--json"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=deadline)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sync did not return within {deadline} s")
    assert "Traceback" not in r.stdout + r.stderr, r.stderr[-3000:]
    return json.loads(r.stdout), r, time.monotonic() - t


def zeros_gz(path: Path, size: int):
    "A gzip file of `size` zero bytes: one packed megabyte repeated, as gzip members (2 GB in about 2 MB)."
    member = gzip.compress(bytes(2**20), compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(size // 2**20):
            f.write(member)


def warning_of(report: dict, name: str) -> str:
    "The one warning line that names file `name`."
    hits = [w for w in said(report) if f"/{name}:" in w]
    assert len(hits) == 1, (name, said(report))
    return hits[0]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, model_dir):
    "One sync over a folder of hostile files and two good ones: its report, wall time and the child's peak memory."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("hostile"))) / "docs"
    write(root, "notes.md", "# Harbour\n\nThe pelican ledger lists every ship in the harbour.\n")
    write(root, "README", "Read me first: the pelican ledger is kept in the lighthouse.\n")
    (root / "fake.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00" + os.urandom(4000))
    zeros_gz(root / "zeros.txt.gz", 2 * 2**30)
    (root / "zeros.gz").write_bytes((root / "zeros.txt.gz").read_bytes())
    (root / "program.gz").write_bytes(gzip.compress(b"\x7fELF\x02\x01\x01\x00" + os.urandom(20000)))
    (root / "loop.1").write_text(".TH LOOP 1\n.SH NAME\nloop \\- a page that includes itself\n.so loop.1\n")
    (root / "oneline").write_bytes(b"x" * (50 * 2**20))
    (root / "nul.py").write_bytes(b"def f():\n    return 1\n\x00\x00\x00\n")
    (root / "blob").write_bytes(bytes(range(256)) * 16)
    (root / "clip.ts").write_bytes(b"G\x40\x00\x10" * 4000)  # an MPEG video, not TypeScript
    report, run, secs = sync(env_for(root, model_dir), peak=root.parent / "peak")
    return dict(report=report, run=run, secs=secs, peak_mib=int((root.parent / "peak").read_text()) / 1024)


def test_hostile_files_fail_or_are_skipped_with_a_reason_and_the_good_ones_are_read(hostile):
    report, run = hostile["report"], hostile["run"]
    assert run.returncode == 1, run.stdout  # files failed
    assert report["ingested"] == 2 + (tool_problem("mandoc") is None), report  # notes.md, README, loop.1
    assert "binary" in warning_of(report, "fake.txt")
    assert "compression bomb" in warning_of(report, "zeros.txt.gz")
    assert "without a space" in warning_of(report, "oneline")
    assert "NUL" in warning_of(report, "nul.py")
    skipped = {".gz (binary)": 2, "(none) (binary)": 1, ".ts (binary)": 1}
    assert report["skippedByFormat"] == skipped, report["skippedByFormat"]
    if tool_problem("mandoc"):
        assert "apt-get install mandoc" in warning_of(report, "loop.1")
    assert report["failed"] == 4 + bool(tool_problem("mandoc")), report


def test_hostile_files_take_bounded_time_and_memory(hostile):
    # measured here: 2 GB of zeros are refused after ~2 MB unpacked; the 50 MB line costs one decode (~2 s)
    assert hostile["secs"] < 120, f"{hostile['secs']:.0f} s"
    assert 50 < hostile["peak_mib"] < 1500, f"{hostile['peak_mib']:.0f} MiB"  # the sync alone, measured


def test_the_sync_summary_names_what_was_skipped_and_why(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "COPYING", "Permission is hereby granted to copy the pelican ledger.\n")
    (root / "blob").write_bytes(bytes(range(256)) * 16)
    (root / "photo.gif").write_bytes(b"GIF89a" + bytes(100))
    r = subprocess.run([CLI, "sync"], capture_output=True, text=True, env=env_for(root, model_dir), timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(l for l in (r.stdout + r.stderr).splitlines() if l.startswith("not read (type):"))
    assert "(none) (binary) 1" in line and ".gif 1" in line, line


def test_settings_decide_what_is_read_as_text(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "COPYING", "Permission is hereby granted to copy the pelican ledger.\n")
    write(root, "release.nfo", "Release notes of the pelican ledger, version two.\n")
    (root / "release.nfo").write_bytes(b"\x00" + (root / "release.nfo").read_bytes())  # binary by its bytes
    write(root, "manual.adoc", "= Pelican ledger\n\nThe manual of the pelican ledger.\n")
    report, run, _ = sync(env_for(root, model_dir, READ_UNKNOWN_TEXT="0", TEXT_EXTENSIONS=".adoc"))
    assert report["ingested"] == 1 and report["skippedByFormat"] == {"(none)": 1, ".nfo": 1}, report
    report, run, _ = sync(env_for(root, model_dir))
    assert report["ingested"] == 1 and report["skippedByFormat"] == {".nfo (binary)": 1}, report


def test_a_bad_text_extensions_setting_is_a_configuration_error(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "a.md", "# A\n\nText.\n")
    r = subprocess.run([CLI, "sync"], capture_output=True, text=True, timeout=120,
                       env=env_for(root, model_dir, TEXT_EXTENSIONS=".nfo ../etc"))  # fmt: skip
    assert r.returncode != 0 and "TEXT_EXTENSIONS" in r.stderr and "not a file extension" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_bz2_and_xz_are_read_by_their_inner_name(index, root):
    from minirag.api import ingest_paths

    text = "The keeper of the lighthouse trims the lamp wick every evening at dusk.\n"
    (root / "keeper.txt.bz2").write_bytes(bz2.compress(text.encode()))
    (root / "NEWS.xz").write_bytes(lzma.compress(("Version two of the lamp.\n" + text).encode()))
    report = ingest_paths(index, [root])
    assert report.failed == 0 and sorted(Path(s).name for s in report.files) == ["NEWS.xz", "keeper.txt.bz2"]
    assert index.read(str(root / "keeper.txt.bz2")).text.strip() == text.strip()


def test_source_code_is_read_in_fences_and_cut_at_definitions(index, root):
    from minirag.api import ingest_paths

    body = "\n\n".join(f"def step_{i}(x):\n    y = x * {i}\n    return y + {i}" for i in range(60))
    write(root, "steps.py", body + "\n")
    assert ingest_paths(index, [root]).failed == 0
    chunks = index.chunks(str(root / "steps.py"))
    texts = [r["text"] for r in chunks.rows]
    assert len(texts) > 1 and all("```python" in t for t in texts), texts[:2]
    for t in texts:  # every chunk starts on a definition and holds whole definitions
        code = t.split("```python\n", 1)[1].rsplit("```", 1)[0]
        assert code.startswith("def step_") and code.rstrip().split("\n")[-1].startswith("    return y"), t


def test_a_script_without_extension_is_code_not_a_heading_per_comment(index, root):
    "Read as Markdown, each `#` comment line of bash's example scripts became a heading, most of them a chunk alone."
    from minirag.api import ingest_paths

    which = ("#\n# which - emulation of `which' as it appears in FreeBSD\n#\n# usage: which [-as] command\n#\n"
             "#  Copyright 1999 Chester Ramey\n#\n\nwhich()\n{\n\tlocal aflag sflag ES a opt\n\tOPTIND=1\n}\n")
    dc = "#!/bin/sed -nf\n#  dc.sed - an arbitrary precision RPN calculator\n#\n/^$/d\ns/[0-9]*/&~/\n"
    write(root, "which", which)
    write(root, "dc.sed", dc)
    assert ingest_paths(index, [root]).failed == 0
    for name, lang in (("which", ""), ("dc.sed", "sed")):
        rows = index.chunks(str(root / name)).rows
        assert [r["kind"] for r in rows] == ["code"], [(r["kind"], r["text"][:60]) for r in rows]
        assert f"```{lang}\n#" in rows[0]["text"], rows[0]["text"]
    notes = "# Notes\n\nThe lamp is trimmed at dusk.\n\n## Later\n\nAnd again at dawn.\n"
    write(root, "NOTES", notes)  # Markdown headings, never three in a row: still read as Markdown
    assert ingest_paths(index, [root]).failed == 0
    assert index.read(str(root / "NOTES")).text.strip() == notes.strip()


# ---- real Debian files, read back from the index and compared with an independent extractor ----

DOC = Path("/usr/share/doc")
MAN = Path("/usr/share/man")
REAL = [  # (path, how the reference text is made)
    (DOC / "bash" / "copyright", "file"),
    (DOC / "coreutils" / "README.Debian", "file"),
    (DOC / "bash" / "README.gz", "zcat"),
    (DOC / "bash" / "changelog.Debian.gz", "zcat"),
    (DOC / "gzip" / "README.gz", "zcat"),
    (DOC / "gzip" / "TODO", "file"),
    (MAN / "man1" / "gzip.1.gz", "man"),
    (MAN / "man1" / "ls.1.gz", "man"),
]  # ~60 KB of text: a few hundred chunks, a minute or two of embedding on a loaded machine
WORD = re.compile(r"[^\W\d_]{3,}")
MIN_RECALL = 0.98


def reference(path: Path, how: str) -> str:
    "The text of `path` by a tool independent of minirag."
    if how == "zcat":
        return subprocess.run(["zcat", str(path)], capture_output=True, text=True, check=True).stdout
    if how == "man":  # no hyphenation, no justification, lines as long as the page's: words stay whole
        env = dict(os.environ, MANWIDTH="2000", MAN_KEEP_FORMATTING="")
        return subprocess.run(["man", "--nh", "--nj", "-l", str(path)], capture_output=True, text=True, env=env,
                              check=True).stdout  # fmt: skip
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def real_folder(tmp_path_factory, model_dir, shared_embedder):
    "The real files that exist here, copied under their own names into a root, synced with the packaged model."
    have = [(p, how) for p, how in REAL if p.is_file()]
    need_man = any(how == "man" for _, how in have)
    for tool in ("mandoc", "man") if need_man else ():
        if tool_problem(tool):
            pytest.skip(tool_reason(tool))
    if len(have) < 4:
        pytest.skip("fewer than 4 of the Debian files this test reads exist here (/usr/share/doc, /usr/share/man)")
    from minirag.api import Index

    root = Path(os.path.realpath(tmp_path_factory.mktemp("debian"))) / "docs"
    copies = []
    for p, how in have:
        dest = root / p.parent.name / p.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest)
        copies.append((p, dest, how))
    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder)
    report = ix.sync()
    yield ix, copies, report
    ix.close()


def test_real_debian_files_are_all_read(real_folder):
    ix, copies, report = real_folder
    assert report.failed == 0 and report.ingested == len(copies), said(report)


def test_real_debian_files_keep_their_words(real_folder):
    ix, copies, _ = real_folder
    low = []
    for original, copy, how in copies:
        want = {w.lower() for w in WORD.findall(reference(original, how))}
        got = {w.lower() for w in WORD.findall(ix.read(str(copy)).text)}
        recall = len(want & got) / len(want)
        if recall < MIN_RECALL:
            low.append(f"{original}: {recall:.3f}, missing {sorted(want - got)[:20]}")
    assert not low, "\n".join(low)


def test_a_man_page_has_its_sections_as_headings_and_its_name_line_as_title(real_folder):
    ix, copies, _ = real_folder
    pages = [c for o, c, how in copies if how == "man"]
    if not pages:
        pytest.skip("no man page of the list exists here")
    doc = ix.read(str(pages[0]))
    assert re.search(r"^#+ NAME$", doc.text, re.M) and re.search(r"^#+ DESCRIPTION$", doc.text, re.M), doc.text[:500]
    assert " - " in doc.title, doc.title
