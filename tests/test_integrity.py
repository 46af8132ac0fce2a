"""Index integrity from outside (issue 12 items 1, 3, 4, 9; issue 13 item 2; issue 14 item 8): the installed
`minirag-mcp` CLI and MCP server as subprocesses, the real packaged model, real files and a real DuckDB index file.

Permission cases drop privileges in the subprocess. The interpreter lives under /root (mode 0700), out of reach of an
unprivileged uid, so instead of switching to uid 65534 the subprocess keeps uid 0 and loses the capabilities that let
root ignore file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER): the kernel then applies the same
owner/mode checks it applies to any other user."""

import ast, json, os, shutil, signal, subprocess, sys
from pathlib import Path

import anyio
import duckdb
import pytest
from conftest import said, write

CLI = str(Path(sys.executable).parent / "minirag-mcp")  # the console script pip installed (what PATH runs)
DROP = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
needs_drop = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="dropping root's permission override needs root and setpriv (util-linux)",
)


def run(root, db, model_dir, *args, prefix=(), env=None):
    "Run the CLI with this root, index folder and the packaged model."
    cmd = [
        *prefix,
        CLI,
        *args,
        "--base-dir",
        str(root),
        "--db-path",
        str(db),
        "--model-name",
        str(model_dir),
        "--cache-dir",
        str(model_dir.parent),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def as_json(p) -> dict:
    "stdout of a `--json` run: one JSON document and nothing else."
    return json.loads(p.stdout)


def lines(s: str) -> list[str]:
    return [l for l in s.splitlines() if l.strip()]


def source_count(st: dict) -> int:
    return st["sourceCount"] if "sourceCount" in st else st["sources"]


def hits(p) -> list[tuple[str, int]]:
    return [(h["source"], h["chunkIndex"]) for h in as_json(p)["results"]]


@pytest.fixture
def db(tmp_path):
    return tmp_path / "idx"


# ---- one real file is one source ------------------------------------------------------------------------


@pytest.fixture
def tree(root):
    write(root, "a.md", "# Alpha\n\nThe alpha note is about routers and switches.\n")
    write(root, "sub/b.md", "# Bravo\n\nBravo covers sourdough bread and a long cold fermentation.\n")
    return root


def test_a_file_named_twice_is_stored_once(tree, db, model_dir):
    "`ingest D D/sub D/sub/b.md` stores b.md once: two files, two sources, and a query returns its chunk once."
    p = run(
        tree,
        db,
        model_dir,
        "ingest",
        str(tree),
        str(tree / "sub"),
        str(tree / "sub/b.md"),
        str(tree / "sub/b.md"),
        "--json",
    )
    assert p.returncode == 0, p.stderr
    assert as_json(p)["ingested"] == 2 and sorted(as_json(p)["files"]) == [str(tree / "a.md"), str(tree / "sub/b.md")]
    st = as_json(run(tree, db, model_dir, "status", "--json"))
    assert source_count(st) == 2
    q = hits(run(tree, db, model_dir, "query", "sourdough bread fermentation", "--json"))
    assert q.count((str(tree / "sub/b.md"), 0)) == 1 and len(q) == len(set(q)), q
    assert as_json(run(tree, db, model_dir, "sync", "--json"))["skipped"] == 2


def _with_duplicates(db_file: Path, source: str, copies: int):
    "Turn an index into what the old schema allowed: no key on sources, and `source` stored `copies` more times."
    from minirag.store import connect

    con = connect(db_file)
    try:
        con.execute("CREATE TABLE s1 AS SELECT * FROM sources; DROP TABLE sources; ALTER TABLE s1 RENAME TO sources")
        top = con.execute("SELECT max(id) FROM chunks").fetchone()[0]
        for k in range(1, copies + 1):
            off = top * k
            con.execute("INSERT INTO sources SELECT * FROM sources WHERE source = ? LIMIT 1", [source])
            con.execute(
                f"""INSERT INTO postings SELECT p.term, p.chunk_id + {off}, p.tf FROM postings p
                            JOIN chunks c ON c.id = p.chunk_id WHERE c.source = ? AND c.id <= {top}""",
                [source],
            )
            con.execute(
                f"INSERT INTO chunks SELECT * REPLACE (id + {off} AS id) FROM chunks WHERE source = ? AND id <= {top}",
                [source],
            )
        assert con.execute("SELECT count(*) FROM sources WHERE source = ?", [source]).fetchone()[0] == copies + 1
    finally:
        con.close()


def test_an_index_holding_duplicates_is_repaired(tree, db, model_dir):
    "An index written before the key, holding one file three times, is repaired when it is next opened."
    assert run(tree, db, model_dir, "ingest", str(tree)).returncode == 0
    b = str(tree / "sub/b.md")
    _with_duplicates(db / "index.duckdb", b, 2)
    st = as_json(run(tree, db, model_dir, "status", "--json"))
    assert source_count(st) == 2, st
    q = hits(run(tree, db, model_dir, "query", "sourdough bread fermentation", "--json"))
    assert q.count((b, 0)) == 1 and len(q) == len(set(q)), q
    s = as_json(run(tree, db, model_dir, "sync", "--json"))
    assert (s["ingested"], s["skipped"], s["failed"]) == (0, 2, 0), s  # nothing left to repair, nothing re-read
    con = duckdb.connect(str(db / "index.duckdb"), read_only=True)
    try:
        assert (
            con.execute(
                "SELECT count(*) FROM duckdb_constraints() "
                "WHERE table_name = 'sources' AND constraint_type = 'PRIMARY KEY'"
            ).fetchone()[0]
            == 1
        )
        assert con.execute(
            "SELECT count(*), count(DISTINCT chunk_index) FROM chunks WHERE source = ?", [b]
        ).fetchone() == (1, 1)
        assert (
            con.execute("SELECT count(*) FROM postings WHERE chunk_id NOT IN (SELECT id FROM chunks)").fetchone()[0]
            == 0
        )
    finally:
        con.close()


# ---- a sync lock that cannot be opened ----------------------------------------------------------------


def _lock_warning(p, lock: Path, cause: str):
    "Exactly one stderr line: a warning naming the lock, the cause and what is lost."
    err = lines(p.stderr)
    assert len(err) == 1, p.stderr
    assert err[0].startswith("warn: ") and str(lock) in err[0] and cause.lower() in err[0].lower(), err[0]
    assert "concurrent syncs" in err[0] and "not guarded" in err[0], err[0]
    assert "unexpected" not in p.stderr and "Traceback" not in p.stderr


@needs_drop
def test_lock_left_by_another_user(tree, db, model_dir):
    """A `.sync.lock` owned by another user with mode 0600 (e.g. left by `sudo minirag-mcp sync`): sync goes on, one
    warning."""
    db.mkdir()
    lock = db / ".sync.lock"
    lock.write_text("")
    os.chown(lock, 65534, 65534)
    lock.chmod(0o600)
    p = run(tree, db, model_dir, "sync", "--json", prefix=DROP)
    assert p.returncode == 0, p.stderr
    r = as_json(p)
    assert (r["ingested"], r["failed"]) == (2, 0) and any(str(lock) in w for w in r["warnings"]), r
    _lock_warning(p, lock, "permission denied")


def test_folder_in_the_lock_s_place(tree, db, model_dir):
    (db / ".sync.lock").mkdir(parents=True)
    p = run(tree, db, model_dir, "sync", "--json")
    assert p.returncode == 0 and as_json(p)["ingested"] == 2, p.stderr
    _lock_warning(p, db / ".sync.lock", "is a folder")
    p = run(tree, db, model_dir, "sync")  # plain text: counts on stdout, the warning on stderr
    assert p.returncode == 0 and lines(p.stdout)[-1].startswith("ingested 0  skipped 2"), p.stdout
    _lock_warning(p, db / ".sync.lock", "is a folder")


@needs_drop
def test_read_only_index_folder(tree, db, model_dir):
    """A read-only index folder whose index file is writable: a sync that has nothing to write goes on without the lock
    (exit 0, one warning); one that must write stops with one error naming the folder — no stack trace, no
    `unexpected`."""
    assert run(tree, db, model_dir, "sync").returncode == 0
    for n in (".sync.lock", ".sync.lock.pid", ".waiting.lock"):
        (db / n).unlink(missing_ok=True)
    db.chmod(0o555)
    try:
        p = run(tree, db, model_dir, "sync", "--json", prefix=DROP)
        assert p.returncode == 0 and as_json(p)["skipped"] == 2, p.stderr
        _lock_warning(p, db / ".sync.lock", "permission denied")
        write(tree, "c.md", "# Charlie\n\nCharlie is new and must be written.\n")
        p = run(tree, db, model_dir, "sync", prefix=DROP)
        assert p.returncode == 1
        err = [l for l in lines(p.stderr) if l.startswith("error:")]
        assert len(err) == 1 and str(db) in err[0] and "not writable" in err[0], p.stderr
        assert "unexpected" not in p.stderr and "Traceback" not in p.stderr
    finally:
        db.chmod(0o755)


@needs_drop
def test_sync_start_without_the_lock_warns(tree, db, model_dir):
    "MCP `sync_start` over stdio, the lock owned by another user: the job runs and the result carries one warning."
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    db.mkdir()
    lock = db / ".sync.lock"
    lock.write_text("")
    os.chown(lock, 65534, 65534)
    lock.chmod(0o600)
    env = {
        "BASE_DIR": str(tree),
        "DB_PATH": str(db),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }
    params = StdioServerParameters(command=DROP[0], args=[*DROP[1:], CLI], env=env)

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            r = await c.call_tool("sync_start", {})
            assert not r.is_error, r.content
            j = r.structured_content
            assert j["state"] == "running" and len(j["warnings"]) == 1, j
            assert str(lock) in j["warnings"][0] and "not guarded" in j["warnings"][0]
            while (s := (await c.call_tool("sync_status", {"jobId": j["jobId"]})).structured_content)[
                "state"
            ] == "running":
                await anyio.sleep(0.1)
            assert s["state"] == "succeeded" and s["counts"]["ingested"] == 2 and s["counts"]["failed"] == 0, s

    anyio.run(main)


# ---- portable locks -----------------------------------------------------------------------------------

# Runs the CLI with `import fcntl` refused to the packages named in MINIRAG_TEST_NO_FCNTL, as it is on Windows.
# (Third-party libraries such as mcp's stdio transport import fcntl on POSIX only, so they keep it.)
NO_FCNTL = """
import builtins, os, sys
_deny = tuple(os.environ["MINIRAG_TEST_NO_FCNTL"].split(","))
_import = builtins.__import__
def _guarded(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "fcntl" and (globals or {}).get("__name__", "").startswith(_deny):
        raise ImportError("No module named 'fcntl'")
    return _import(name, globals, locals, fromlist, level)
builtins.__import__ = _guarded
"""


def portable(root, db, model_dir, *args, deny="minirag", env=None, popen=False, **kw):
    "The CLI in a process where minirag (and `deny`) cannot import fcntl."
    code = NO_FCNTL + "from minirag.cli import main\nsys.exit(main())\n"
    cmd = [
        sys.executable,
        "-c",
        code,
        *args,
        "--base-dir",
        str(root),
        "--db-path",
        str(db),
        "--model-name",
        str(model_dir),
        "--cache-dir",
        str(model_dir.parent),
    ]
    env = {**os.environ, "MINIRAG_TEST_NO_FCNTL": deny, **(env or {})}
    if popen:
        return subprocess.Popen(cmd, env=env, text=True, **kw)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def _fcntl_imports(path: Path) -> list[str]:
    "Where `path` imports fcntl (an import statement, `__import__` or `import_module`), as module.function names."
    found = []

    def names_fcntl(node):
        if isinstance(node, ast.Import):
            return any(a.name.split(".")[0] == "fcntl" for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] == "fcntl"
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            fn = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            return fn in ("__import__", "import_module") and node.args[0].value == "fcntl"
        return False

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            scoped = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            here = f"{where}.{child.name}" if scoped else where
            if names_fcntl(child):
                found.append(here)
            visit(child, here)

    visit(ast.parse(path.read_text()), path.stem)
    return found


def test_every_module_imports_without_fcntl():
    """No minirag module imports fcntl at import time: every module imports where fcntl is missing (as on Windows),
    and the one import of it sits inside `store._fcntl`, run when a lock is taken (flock directly on POSIX;
    portalocker only where fcntl is missing)."""
    code = NO_FCNTL + (
        "import importlib, pkgutil, minirag\n"
        "for m in pkgutil.iter_modules(minirag.__path__): importlib.import_module('minirag.' + m.name)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MINIRAG_TEST_NO_FCNTL": "minirag"},
    )
    assert p.returncode == 0, p.stderr
    src = Path(__file__).resolve().parents[1] / "minirag"
    assert [w for f in sorted(src.glob("*.py")) for w in _fcntl_imports(f)] == ["store._fcntl"]


def test_second_sync_is_refused_naming_the_holder_until_it_is_killed(tree, db, model_dir):
    """R-Y7 on the portable path: a paused sync holds the lock; a second is refused at once naming its pid; SIGKILL
    frees it."""
    holder = portable(
        tree,
        db,
        model_dir,
        "sync",
        popen=True,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env={"MINIRAG_TEST_PAUSE_AT": "scanned", "MINIRAG_TEST_PAUSE_SECONDS": "120"},
    )
    try:
        for line in holder.stderr:
            if "minirag-test-paused scanned" in line:
                break
        p = portable(tree, db, model_dir, "sync", "--json")
        assert p.returncode == 1 and f"pid {holder.pid}, running for" in p.stderr, p.stderr
        assert "another sync is already running" in p.stderr
        assert run(tree, db, model_dir, "sync", "--json").returncode == 1  # the installed CLI sees the same lock
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    p = portable(tree, db, model_dir, "sync", "--json")
    assert p.returncode == 0 and as_json(p)["ingested"] == 2, p.stderr


def test_no_lock_primitive_at_all_is_one_warning(tree, db, model_dir):
    "Where even the lock library finds no primitive, sync goes on unguarded and says so once."
    p = portable(tree, db, model_dir, "sync", "--json", deny="minirag,portalocker")
    assert p.returncode == 0 and as_json(p)["ingested"] == 2, p.stderr
    _lock_warning(p, db / ".sync.lock", "file locks are unavailable")


# ---- R-I2: dependency folders and ignore files --------------------------------------------------------


def test_dependency_folders_and_ignore_files_are_skipped(root, db, model_dir):
    keep = ["guide.md", "notes/plan.md", "notes/drafts/keep.md"]
    skip = [
        "node_modules/pkg/README.md",
        "src/__pycache__/cache.md",
        "venv/lib/site.md",
        "lib/site-packages/dep/README.md",
        "tools/env/pyvenv.cfg",
        "tools/env/lib/x.md",
        "build/out.md",
        "notes/secret.md",
        "notes/drafts/wip.md",
        "report.txt",
    ]
    for n in keep + skip:
        write(root, n, f"# {Path(n).stem}\n\nDocument {n} about gardening.\n")
    write(root, ".gitignore", "build/\n*.txt\n")
    write(
        root, "notes/.gitignore", "secret.md\ndrafts/*\n!drafts/keep.md\n"
    )  # relative to notes/, re-including one file
    write(root, "notes/drafts/.ignore", "wip.md\n")
    p = run(root, db, model_dir, "sync", "--json")
    assert p.returncode == 0, p.stderr
    assert as_json(p)["ingested"] == len(keep), as_json(p)
    listed = run(root, db, model_dir, "list", "--json")
    assert sorted(Path(f["filePath"]).relative_to(root).as_posix() for f in as_json(listed)["files"]) == sorted(keep)
    for n in (
        "node_modules",
        "__pycache__",
        "site-packages",
        "secret",
        "wip",
        "build",
        "report",
    ):  # says nothing about them
        assert n not in listed.stdout and n not in listed.stderr
    # a file already indexed that becomes ignored is dropped by the next sync
    write(root, ".gitignore", "build/\n*.txt\nguide.md\n")
    r = as_json(run(root, db, model_dir, "sync", "--json"))
    assert (r["deleted"], r["failed"]) == (1, 0), r
    assert str(root / "guide.md") not in run(root, db, model_dir, "list", "--json").stdout


# ---- fatal causes stop the run once -------------------------------------------------------------------


def test_a_missing_model_is_one_error_not_one_per_file(root, db, model_dir, tmp_path):
    for i in range(6):
        write(root, f"f{i}.md", f"# File {i}\n\nText {i}.\n")
    p = subprocess.run(
        [CLI, "sync", "--base-dir", str(root), "--db-path", str(db), "--model-name", str(tmp_path / "no-such-model")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1
    err = lines(p.stderr)
    assert not any(l.startswith("warn:") for l in err), p.stderr
    assert len([l for l in err if l.startswith("error:")]) == 1 and "no-such-model" in p.stderr, p.stderr


# ---- remembered failures --------------------------------------------------------------------------------


def _failed_at(db: Path, source: str):
    con = duckdb.connect(str(db / "index.duckdb"), read_only=True)
    try:
        return con.execute("SELECT failed_at, reason FROM failures WHERE source = ?", [source]).fetchone()
    finally:
        con.close()


def test_an_unchanged_failed_file_is_not_parsed_again(root, db, model_dir):
    "A corrupt .docx fails once; the next sync reports it failed again from memory (no new attempt); fixed, it ingests."
    bad = root / "report.docx"
    bad.write_bytes(b"PK\x03\x04" + os.urandom(2000))  # a zip signature and junk: not a Word file
    write(root, "fine.md", "# Fine\n\nThis one reads.\n")
    p = run(root, db, model_dir, "sync", "--json")
    r = as_json(p)
    assert p.returncode == 1 and (r["ingested"], r["failed"]) == (1, 1), r
    assert [l for l in lines(p.stderr) if l.startswith("warn:")] == [f"warn: {said(r)[0]}"] and str(bad) in said(r)[0]
    assert [e["source"] for e in r["errors"]] == [str(bad)] and r["warnings"] == [], r
    first = _failed_at(db, str(bad))
    assert first is not None and str(bad) in first[1]

    p = run(root, db, model_dir, "sync")  # a failure already known only warns: cron and timers see success
    assert p.returncode == 0 and "failed 1" in p.stdout, p.stdout
    warn = [l for l in lines(p.stderr) if l.startswith("warn:")]
    assert any(first[1] in w and "not read again" in w for w in warn), p.stderr
    assert run(root, db, model_dir, "sync", "--strict").returncode == 1
    assert _failed_at(db, str(bad)) == first  # the attempt was not repeated: the row was not written again
    f = {x["filePath"]: x for x in as_json(run(root, db, model_dir, "list", "--json"))["files"]}[str(bad)]
    assert f["state"] == "failed" and f["reason"] == first[1], f

    import docx

    d = docx.Document()
    d.add_heading("Quarterly report", 1)
    d.add_paragraph("Revenue grew in the northern region.")
    d.save(bad)
    r = as_json(run(root, db, model_dir, "sync", "--json"))
    assert (r["ingested"], r["failed"], r["skipped"]) == (1, 0, 1), r
    assert _failed_at(db, str(bad)) is None
    f = {x["filePath"]: x for x in as_json(run(root, db, model_dir, "list", "--json"))["files"]}[str(bad)]
    assert f["state"] == "indexed" and "reason" not in f
