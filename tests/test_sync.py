"Sync (R-Y1..R-Y7, R-Y10, R-O2): real packaged model, real DuckDB files, real subprocesses for the lock and the CLI."

import hashlib, json, os, shutil, subprocess, sys, time
from pathlib import Path
import pytest
from conftest import said, write
from minirag.api import Index
from minirag.config import MiniragError
from minirag.chunk import SCHEME_VERSION
from minirag.tables import Tables, SourceRecord
import minirag.sync as msync
import minirag.ingest as mingest
from minirag.store import SyncBusyError
from minirag.sync import COUNT_KEYS
from minirag.wire import to_wire  # the typed results as the MCP tools return them


def counts(r):
    return {k: r[k] for k in COUNT_KEYS}


def C(**kw):
    return {k: kw.get(k, 0) for k in COUNT_KEYS}


def sources(ix):
    return {Path(r["source"]).relative_to(ix.cfg.roots[0]).as_posix(): r for r in ix.engine.tables.sources()}


DENY_LISTING = """import os
_deny = os.environ.get("MINIRAG_TEST_DENY_LISTING")
if _deny:
    _real = os.scandir
    def _scandir(p="."):
        if os.fspath(p) == _deny: raise PermissionError(13, "Permission denied", os.fspath(p))
        return _real(p)
    os.scandir = _scandir
"""


def cli_sync(ix, *args, tty: bool = False, deny: Path | None = None):
    """The installed `minirag-mcp sync` on the index `ix` is configured for, in a subprocess: (exit code, stdout,
    stderr). `deny`: a folder the subprocess cannot list (as `_deny_listing` does in this process, through a
    sitecustomize)."""
    env = {
        **os.environ,
        "BASE_DIR": os.pathsep.join(map(str, ix.cfg.roots)),
        "DB_PATH": str(ix.cfg.db_path),
        "MODEL_NAME": ix.cfg.model_name,
        "CACHE_DIR": str(ix.cfg.cache_dir),
    }
    if deny is not None:
        hook = ix.cfg.roots[0].parent / "deny-listing"
        hook.mkdir(exist_ok=True)
        (hook / "sitecustomize.py").write_text(DENY_LISTING)
        env.update(
            MINIRAG_TEST_DENY_LISTING=str(deny), PYTHONPATH=os.pathsep.join([str(hook), env.get("PYTHONPATH", "")])
        )
    ix.close()  # the other process opens the index file
    cmd = [shutil.which("minirag-mcp") or "minirag-mcp", "sync", *args]
    if not tty:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        return p.returncode, p.stdout, p.stderr
    import fcntl, pty, struct, termios

    master, slave = pty.openpty()  # stderr a terminal: the progress bar shows
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a new pty has 0 columns
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break  # the child closed the terminal
        if not chunk:
            break
        err += chunk
    out = p.stdout.read().decode()
    p.wait(timeout=300)
    os.close(master)
    return p.returncode, out, err.decode(errors="replace")


TEXTS = {
    "alpha.md": "# Alpha\n\nThe alpha document talks about routers and switches.\n",
    "bravo.md": "# Bravo\n\nBravo covers sourdough bread and long fermentation.\n",
    "sub/charlie.md": "# Charlie\n\nCharlie explains tomato gardening in dry summers.\n",
}


@pytest.fixture
def synced(index, root):
    for n, t in TEXTS.items():
        write(root, n, t)
    r = to_wire(index.sync())
    assert counts(r) == C(ingested=3), r
    return index


def test_resync_and_touch_embed_nothing(synced, root, monkeypatch):
    calls = synced.engine.embedder.calls
    assert counts(to_wire(synced.sync())) == C(skipped=3)
    os.utime(root / "bravo.md", (1_000_000, 1_000_000))
    assert counts(to_wire(synced.sync())) == C(skipped=3)
    assert synced.engine.embedder.calls == calls
    assert sources(synced)["bravo.md"]["mtime"] == 1_000_000.0  # the stored mtime follows the file
    # (size, mtime) equal → not even hashed
    hashed = []
    monkeypatch.setattr(
        msync, "file_hash", lambda p: hashed.append(p) or hashlib.sha256(Path(p).read_bytes()).hexdigest()
    )
    assert counts(to_wire(synced.sync())) == C(skipped=3) and hashed == []
    os.utime(root / "alpha.md", (2_000_000, 2_000_000))
    assert counts(to_wire(synced.sync())) == C(skipped=3) and [p.name for p in hashed] == ["alpha.md"]


def test_edit_reingests_only_that_file(synced, root):
    calls = synced.engine.embedder.calls
    (root / "bravo.md").write_text("# Bravo\n\nBravo now covers rye bread and a cold proof.\n")
    assert counts(to_wire(synced.sync())) == C(ingested=1, skipped=2)
    assert synced.engine.embedder.calls > calls
    assert "rye" in to_wire(synced.read(root / "bravo.md"))["text"]


def test_stale_scheme_is_reingested_with_same_bytes(synced, root):
    "R-C9: rows cut with an older chunking scheme are re-read even when nothing changed on disk."
    with synced.store.transaction() as con:
        con.execute("UPDATE sources SET scheme = ? WHERE source = ?", [SCHEME_VERSION - 1, str(root / "alpha.md")])
        con.execute("UPDATE chunks SET scheme = ? WHERE source = ?", [SCHEME_VERSION - 1, str(root / "alpha.md")])
    assert to_wire(synced.status())["staleChunkCount"] > 0
    assert counts(to_wire(synced.sync())) == C(ingested=1, skipped=2)
    assert to_wire(synced.status())["staleChunkCount"] == 0 and sources(synced)["alpha.md"]["scheme"] == SCHEME_VERSION


def test_deleted_file_is_pruned(synced, root):
    (root / "alpha.md").unlink()
    assert counts(to_wire(synced.sync())) == C(deleted=1, skipped=2)
    assert "alpha.md" not in sources(synced)


def test_restricted_sync_never_prunes_outside_its_path(index, root):
    "R-Y2: /r/docs never covers /r/docs-archive (prefix at a separator only)."
    write(root, "docs/a.md", "# A\n\nAbout apples.\n")
    write(root, "docs-archive/b.md", "# B\n\nAbout bananas.\n")
    write(root, "other/c.md", "# C\n\nAbout cherries.\n")
    assert to_wire(index.sync())["ingested"] == 3
    (root / "docs-archive/b.md").unlink()
    (root / "other/c.md").unlink()
    write(root, "docs/d.md", "# D\n\nAbout dates.\n")
    r = to_wire(index.sync(root / "docs"))
    assert counts(r) == C(ingested=1, skipped=1) and r["scope"] == str(root / "docs")
    assert {"docs-archive/b.md", "other/c.md"} <= set(sources(index))
    r = to_wire(index.sync(str(root / "docs-archive/b.md")))  # one vanished file, named: pruned
    assert counts(r) == C(deleted=1) and "docs-archive/b.md" not in sources(index)
    assert counts(to_wire(index.sync())) == C(deleted=1, skipped=2)


def test_restricted_sync_outside_roots_is_refused(index, tmp_path):
    with pytest.raises(MiniragError, match="outside the document roots"):
        to_wire(index.sync(tmp_path))


def test_move_is_repathed_without_reading(synced, root, monkeypatch):
    "R-Y3: same name, same bytes, other folder → rename_source; no conversion, no embedding."
    calls = synced.engine.embedder.calls

    def boom(*a, **k):
        raise AssertionError("a moved file must not be converted")

    monkeypatch.setattr(mingest, "convert_file", boom)
    (root / "archive").mkdir()
    os.rename(root / "bravo.md", root / "archive/bravo.md")
    assert counts(to_wire(synced.sync())) == C(moved=1, skipped=2)
    assert synced.engine.embedder.calls == calls
    s = sources(synced)
    assert "archive/bravo.md" in s and "bravo.md" not in s and s["archive/bravo.md"]["chunk_count"] > 0
    hit = to_wire(synced.query("sourdough fermentation", top_k=1))["results"][0]
    assert hit["source"] == str(root / "archive/bravo.md")
    assert "sourdough" in to_wire(synced.read(root / "archive/bravo.md"))["text"]


@pytest.mark.parametrize("how", ["renamed", "edited"])
def test_renamed_or_edited_move_is_reread(synced, root, how):
    (root / "archive").mkdir()
    if how == "renamed":
        os.rename(root / "bravo.md", root / "archive/bread.md")
    else:
        (root / "archive/bravo.md").write_text(TEXTS["bravo.md"] + "\nOne more line.\n")
        (root / "bravo.md").unlink()
    assert counts(to_wire(synced.sync())) == C(ingested=1, deleted=1, skipped=2)


# ---- R-Y4: what cannot be listed is kept -----------------------------------------------------------


def _deny_listing(monkeypatch, folder: Path):
    """Make `folder` unlistable the way a permission error does. The tests run as root, where chmod 000 does not
    block reads, so os.scandir (what os.walk lists with) raises the PermissionError the kernel would."""
    real = os.scandir

    def scandir(p="."):
        if os.fspath(p) == str(folder):
            raise PermissionError(13, "Permission denied", os.fspath(p))
        return real(p)

    monkeypatch.setattr(os, "scandir", scandir)


def test_unlistable_folder_keeps_its_entries(synced, root, monkeypatch):
    (root / "bravo.md").unlink()  # a real deletion elsewhere still happens
    _deny_listing(monkeypatch, root / "sub")
    r = to_wire(synced.sync())
    assert counts(r) == C(deleted=1, skipped=1, failed=1)
    assert (r["errors"], r["warnings"]) == (
        [
            dict(
                source=str(root / "sub"),
                error="folder cannot be listed (Permission denied); "
                f"its 1 indexed file is kept and still searchable: {root / 'sub/charlie.md'}",
            )
        ],
        [],
    )
    assert "sub/charlie.md" in sources(synced)
    code, out, err = cli_sync(synced, deny=root / "sub")
    assert code == 1 and "warn: " in err and "charlie.md" in err
    assert "warn: " not in out and out.startswith("ingested 0")  # counts on stdout, warn: lines on stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads through chmod 000; covered by the scandir test above")
def test_unlistable_folder_chmod(synced, root):
    os.chmod(root / "sub", 0)
    try:
        r = to_wire(synced.sync())
    finally:
        os.chmod(root / "sub", 0o755)
    assert r["failed"] == 1 and "sub/charlie.md" in sources(synced)


def test_missing_root_and_suddenly_empty_root_keep_everything(tmp_path, model_dir, shared_embedder):
    r1, r2 = tmp_path / "one", tmp_path / "two"
    for r in (r1, r2):
        for i in range(5):
            write(r, f"n{i}.md", f"# Note {i} in {r.name}\n\nSome text number {i} about {r.name}.\n")
    ix = Index.open(
        [r1, r2],
        db_path=tmp_path / "idx",
        model_name=str(model_dir),
        cache_dir=model_dir.parent,
        embedder=shared_embedder,
    )
    assert to_wire(ix.sync())["ingested"] == 10
    os.rename(r2, tmp_path / "unmounted")  # a drive that is not there
    for f in r1.iterdir():
        f.unlink()  # a root that lists nothing
    r = to_wire(ix.sync())
    assert counts(r) == C(failed=2), r
    assert len(ix.engine.tables.sources()) == 10
    w1 = next(w for w in said(r) if w.startswith(str(r1)))
    w2 = next(w for w in said(r) if w.startswith(str(r2)))
    assert (
        "lists no documents" in w1
        and "its 5 indexed files are kept" in w1
        and f"{r1 / 'n0.md'}, {r1 / 'n1.md'}, {r1 / 'n2.md'} and 2 more" in w1
    )
    assert "not found" in w2 and str(r2 / "n0.md") in w2 and "BASE_DIRS" in w2
    ix.close()


# ---- R-Y5: bad files ---------------------------------------------------------------------------------


def test_bad_files_are_named_and_the_rest_ingests(index, root):
    write(root, "good.md", "# Good\n\nThis document is fine and mentions zebras.\n")
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage without xref\n")
    # an encrypted OOXML file is an OLE compound file, not a zip
    (root / "secret.docx").write_bytes(
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504 + b"EncryptedPackage" + b"\x00" * 1000
    )
    (root / "image.md").write_bytes(bytes(range(256)) * 20)
    (root / "empty.txt").write_bytes(b"")
    (root / "latin1.txt").write_bytes(
        "Caf\xe9 cr\xe8me br\xfbl\xe9e is served with a spoon.\n".encode("latin-1") + b"\xff\xfe end\n"
    )
    (root / "~$good.docx").write_bytes(b"lock file bytes")
    (root / ".hidden.md").write_text("# Hidden\n\nnever indexed\n")
    r = to_wire(index.sync())
    bad = ["corrupt.pdf", "secret.docx", "image.md", "empty.txt"]
    assert (r["ingested"], r["failed"]) == (2, 4), r
    for name, w in zip(sorted(bad), sorted(said(r), key=lambda w: Path(w.split(":")[0]).name)):
        assert name in w, (name, w)
    assert set(sources(index)) == {"good.md", "latin1.txt"}
    # invalid UTF-8 is decoded (charset detection), not refused: the words stay searchable
    assert to_wire(index.query("spoon", top_k=1))["results"][0]["source"] == str(root / "latin1.txt")
    code, out, err = cli_sync(index)
    assert code == 0  # the failed files are not parsed again, still counted and named: known, so only warned
    assert out.splitlines() == ["ingested 0  skipped 2  moved 0  deleted 0  failed 4  unreadable 0"]
    warns = [l for l in err.splitlines() if l.startswith("warn: ")]
    assert len([l for l in warns if l.endswith("(unchanged since it failed; not read again)")]) == 4, err
    assert len([l for l in warns if l.startswith("warn: 4 file(s) failed before")]) == 1, err  # and one summary


def test_failed_reingest_keeps_the_previous_version(synced, root):
    (root / "alpha.md").write_bytes(b"\x00\x01binary now")
    r = to_wire(synced.sync())
    assert r["failed"] == 1 and r["errors"][0]["source"] == str(root / "alpha.md")
    assert "routers" in to_wire(synced.read(root / "alpha.md"))["text"]


# ---- R-O2: images without the OCR extra ----------------------------------------------------------------


def test_indexed_images_are_kept_as_unreadable_without_ocr(synced, root, monkeypatch):
    img = root / "scan.png"
    img.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    emb = synced.engine.embedder
    text = "# scan\n\nRecognised words from a scanned receipt."
    synced.engine.tables.write_batch(
        [
            (
                SourceRecord(
                    str(img),
                    "file",
                    str(root),
                    "scan",
                    "generic",
                    "x",
                    img.stat().st_size,
                    0.0,
                    "rapidocr",
                    SCHEME_VERSION,
                ),
                [
                    dict(
                        chunk_index=0,
                        parent_id="0",
                        text=text,
                        prefix_len=0,
                        section_head="",
                        kind="text",
                        tokens=10,
                        scheme=SCHEME_VERSION,
                    )
                ],
                emb.embed([text]),
            )
        ],
        emb.model_id,
    )
    monkeypatch.setattr("minirag.formats.convert.ocr_available", lambda: False)  # what sync and its scan ask
    (root / "new.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x01" * 64)
    r = to_wire(synced.sync())
    assert counts(r) == C(skipped=3, unreadable=1)
    assert "scan.png" in sources(synced) and "new.png" not in sources(synced)
    img.unlink()
    assert counts(to_wire(synced.sync())) == C(skipped=3, deleted=1)


# ---- R-Y7: the sync lock ------------------------------------------------------------------------------

HOLD = """
import sys, time
from pathlib import Path
from minirag.store import SyncLock
l = SyncLock(Path(sys.argv[1])).acquire()
print("held", flush=True); time.sleep(120)
"""


def test_second_sync_is_refused_while_ingest_and_query_work(synced, root):
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(synced.cfg.db_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        time.sleep(1.1)
        t = time.monotonic()
        with pytest.raises(SyncBusyError) as ei:
            to_wire(synced.sync())
        assert time.monotonic() - t < 1, "refused at once, not after a wait"
        assert f"pid {p.pid}, running for 1 s" in str(ei.value) or f"pid {p.pid}, running for 2 s" in str(ei.value)
        with pytest.raises(SyncBusyError):
            to_wire(synced.sync_start())
        to_wire(synced.ingest(write(root, "quick.md", "# Quick\n\nA single-file ingest during a sync is fine.\n")))
        assert to_wire(synced.query("single-file ingest", top_k=1))["results"][0]["source"].endswith("quick.md")
    finally:
        p.kill()
        p.wait()
    assert counts(to_wire(synced.sync())) == C(skipped=4)  # the kernel dropped the dead holder's lock


# ---- R-Y10: jobs ----------------------------------------------------------------------------------------


def test_sync_job_runs_in_background(index, root):
    for i in range(40):
        write(root, f"f{i:02}.md", f"# File {i}\n\nParagraph {i} about topic {i % 7}.\n")
    t = time.monotonic()
    j = to_wire(index.sync_start())
    assert j["state"] == "running" and time.monotonic() - t < 0.5
    seen = []
    while (s := to_wire(index.sync_status(j["jobId"])))["state"] == "running":
        seen.append(s["progress"])
        time.sleep(0.02)
    assert s["state"] == "succeeded" and s["counts"]["ingested"] == 40 and "error" not in s
    assert s["progress"] == {"done": 40, "total": 40, "current": ""}
    # done counts files committed (40 small files are one batch): while running, the job says what it is at
    assert any(p["done"] < 40 and p["current"].startswith(("reading ", "embedding ")) for p in seen), seen[-5:]
    with pytest.raises(MiniragError, match="unknown sync job"):
        to_wire(index.sync_status("nope"))
    with pytest.raises(MiniragError, match="outside the document roots"):
        to_wire(index.sync_start("/etc"))


def test_failed_job_reports_the_error(index, root, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(msync, "scan", broken)
    j = to_wire(index.sync_start())
    while (s := to_wire(index.sync_status(j["jobId"])))["state"] == "running":
        time.sleep(0.02)
    assert s["state"] == "failed" and "disk on fire" in s["error"]
    monkeypatch.undo()
    assert to_wire(index.sync())["failed"] == 0  # the lock was released


# ---- CLI ---------------------------------------------------------------------------------------------------


def test_progress_bar_only_on_a_terminal(synced, root):
    write(root, "more.md", "# More\n\nAnother document.\n")
    code, out, err = cli_sync(synced, tty=True)
    assert code == 0 and out.startswith("ingested 1")
    assert "[" in err and "1/1" in err
    code, out, err = cli_sync(synced, "--json")
    assert code == 0 and err == "" and json.loads(out)["skipped"] == 4  # not a terminal: no bar; stdout pure JSON


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "minirag.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_cli_sync_and_ingest_folder(root, model_dir, tmp_path):
    for n, t in TEXTS.items():
        write(root, n, t)
    (root / "empty.md").write_bytes(b"")
    common = [
        "--base-dir",
        str(root),
        "--db-path",
        str(tmp_path / "idx"),
        "--model-name",
        str(model_dir),
        "--cache-dir",
        str(model_dir.parent),
    ]
    r = cli("sync", "-q", *common)  # results on stdout, warn: lines on stderr (progress silenced)
    assert r.returncode == 1 and r.stdout == "ingested 3  skipped 0  moved 0  deleted 0  failed 1  unreadable 0\n"
    assert r.stderr.startswith(f"warn: {root / 'empty.md'}: the file is empty") and len(r.stderr.splitlines()) == 1
    (root / "empty.md").unlink()
    (root / "alpha.md").unlink()
    r = cli("sync", "--json", *common)
    assert r.returncode == 0, r.stderr
    assert counts(json.loads(r.stdout)) == C(skipped=2, deleted=1)
    write(root, "sub/delta.md", "# Delta\n\nDelta is new.\n")
    r = cli("ingest", "sub", "--json", *common, cwd=root)  # a folder ingest never deletes
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == 2
    r = cli("sync", "sub", *common, cwd=root)
    assert r.returncode == 0 and r.stdout.startswith("ingested 0  skipped 2")


def test_a_sync_opens_the_index_once_not_once_per_batch(index, root, monkeypatch):
    """Closing DuckDB checkpoints, and a checkpoint rewrites the chunks table's last row group (2 s at 100k chunks):
    batches share one open."""
    from minirag.store import Store

    for i in range(24):
        write(root, f"n/note{i:02d}.md", f"# Note {i}\n\nThe lighthouse keeper logged storm number {i} at dawn.\n")
    monkeypatch.setattr(mingest, "EMBED_BATCH_FILES", 4)  # six batches, six writes
    opens, writes = [], []
    real_open, real_write = Store._open, Tables.write_batch
    monkeypatch.setattr(Store, "_open", lambda self: (opens.append(1), real_open(self))[1])
    monkeypatch.setattr(Tables, "write_batch", lambda *a, **k: (writes.append(1), real_write(*a, **k))[1])
    assert index.store.idle_close == 0  # a one-shot process (the CLI) closes after each operation …
    r = to_wire(index.sync())
    assert r["ingested"] == 24 and len(writes) >= 6, (r, len(writes))
    assert len(opens) == 1, len(opens)  # … but not between a sync's batches
    assert index.store._con is None and index.store.idle_close == 0  # closed at the end, setting restored
    assert [h["source"] for h in to_wire(index.query("storm 17 lighthouse", 3))["results"]][0].endswith("note17.md")


def test_dates_backfill_reads_openings_per_batch_and_a_path_sync_only_under_it(synced, root, monkeypatch):
    """An index written before dates: a sync of one path dates the sources under it only, and the backfill reads the
    openings of many sources in one statement, never one per source (40k statements cost 300 s at a million chunks)."""
    with synced.store.transaction() as con:
        con.execute("UPDATE sources SET doc_date = NULL, date_source = NULL")
    per_source, batched = [], []
    real_openings = Tables.openings
    monkeypatch.setattr(Tables, "chunks_of", lambda *a, **k: per_source.append(1) or [])
    monkeypatch.setattr(
        Tables, "openings", lambda self, s, n, con=None: (batched.append(len(s)), real_openings(self, s, n, con))[1]
    )
    (root / "bravo.md").write_text("# Bravo\n\nBravo now covers rye bread and a cold proof.\n")
    assert counts(to_wire(synced.sync(root / "bravo.md"))) == C(ingested=1)
    undated = sorted(Path(r["source"]).name for r in synced.engine.tables.undated())
    assert undated == ["alpha.md", "charlie.md"] and batched == []  # rewritten: dated by its ingest; the rest waits
    assert counts(to_wire(synced.sync())) == C(skipped=3)
    assert synced.engine.tables.undated() == [] and batched == [2] and per_source == []
    assert sources(synced)["alpha.md"]["date_source"] is not None
