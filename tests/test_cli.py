"The installed `minirag-mcp` CLI from outside: streams, pipes, scopes, usage errors, help, JSON errors, missing roots."

import json, os, subprocess, sys, threading
from importlib.metadata import version
from pathlib import Path
import pytest
from conftest import write
from minirag.wire import to_wire  # the typed results as the MCP tools return them

# the console script pip installed next to this interpreter (what `minirag-mcp` on PATH runs)
CLI = str(Path(sys.executable).parent / "minirag-mcp")
ENV_VARS = [
    "BASE_DIR",
    "BASE_DIRS",
    "DB_PATH",
    "CACHE_DIR",
    "MODEL_NAME",
    "MAX_FILE_SIZE",
    "CHUNK_TOKEN_BUDGET",
    "RAG_HYBRID_WEIGHT",
    "RAG_GROUPING",
    "RAG_MAX_DISTANCE",
    "RAG_MAX_FILES",
    "RAG_OCR_LANG",
    "RAG_OCR_MIN_CHARS_PER_PAGE",
    "RAG_INSTRUCTIONS_APPEND",
    "ALLOW_PRIVATE_URLS",
]
COMMANDS = [
    "ingest",
    "ingest-url",
    "sync",
    "query",
    "read-neighbors",
    "read",
    "list",
    "status",
    "delete",
    "eval",
    "classify",
    "demo",
]
DOCS = {
    f"a/alpha{i}.md": f"# Alpha {i}\n\nThe alpha notes talk about zebra crossings, number {i}.\n" for i in range(3)
} | {f"b/beta{i}.md": f"# Beta {i}\n\nThe beta notes talk about zebra stripes, number {i}.\n" for i in range(3)}


def cli(*args, cwd, env, **kw):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300, **kw)


def cli_on_terminal(*args, cwd, env):
    "Run with stderr on a pseudo-terminal (as typed by a person) and stdout piped: (returncode, stdout, terminal text)."
    import fcntl, pty, struct, termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a 120-column terminal
    p = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=slave, text=True, cwd=cwd, env=env)
    os.close(slave)
    seen = []

    def pump():
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                return  # EIO: the child closed the terminal
            if not b:
                return
            seen.append(b)

    t = threading.Thread(target=pump)
    t.start()
    out = p.stdout.read()
    p.wait(timeout=300)
    t.join(timeout=30)
    os.close(master)
    return p.returncode, out, b"".join(seen).decode("utf-8", "replace").replace("\r\n", "\n")


def _env(root, db, model_dir, **extra):
    e = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return dict(
        e, BASE_DIR=str(root), DB_PATH=str(db), MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent), **extra
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, model_dir):
    "A root with two folders, indexed once through the CLI: (root, env)."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("cli"))) / "docs"
    for n, t in DOCS.items():
        write(root, n, t)
    env = _env(root, root.parent / "idx", model_dir)
    r = cli("ingest", "a", "b", "--json", cwd=root, env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == len(DOCS), r.stderr
    return root, env


# ---- streams: results on stdout, warn: and progress on stderr -------------------------------------------


def test_ingest_names_what_it_ingested_and_warns_on_stderr(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    for n, t in DOCS.items():
        write(root, n, t)
    (root / "empty.md").write_bytes(b"")
    env = _env(root, tmp_path / "idx", model_dir)
    warn = f"warn: {root / 'empty.md'}: the file is empty (0 bytes); nothing to index\n"
    r = cli("ingest", "a", "b", "empty.md", cwd=root, env=env)
    assert r.returncode == 1  # a failed file is a failure (R-L2)
    assert r.stdout.splitlines() == [f"ingested {n}  (1 chunk)" for n in sorted(DOCS)] + ["ingested 6  failed 1"], (
        r.stdout
    )
    assert r.stderr == warn  # captured stderr: the warning, no progress updates
    # stderr on a terminal, stdout piped: progress with done/total, a rate and an ETA, ending full
    code, out, term = cli_on_terminal("ingest", "a", "b", "empty.md", cwd=root, env=env)
    assert code == 1 and out == r.stdout
    assert (
        "ingest: 100%" in term and "7/7 [" in term and "file/s" in term and "<00:00" in term and term.endswith(warn)
    ), term
    # --quiet: the counts (the result) and warn: lines stay; progress and the per-file lines go
    code, out, term = cli_on_terminal("ingest", "a", "empty.md", "-q", cwd=root, env=env)
    assert code == 1 and out == "ingested 3  failed 1\n" and term == warn, term


def test_sync_progress_quiet_and_json(corpus):
    root, env = corpus
    write(root, "c/gamma.md", "# Gamma\n\nA new note about zebra fish.\n")
    try:
        r = cli("sync", "c", "--json", cwd=root, env=env)  # --json: stdout is pure JSON, no progress without a terminal
        assert r.returncode == 0 and r.stderr == "" and json.loads(r.stdout)["ingested"] == 1, (r.stdout, r.stderr)
        (root / "c/gamma.md").write_text("# Gamma\n\nAn edited note about zebra fish.\n")
        code, out, term = cli_on_terminal("sync", "c", cwd=root, env=env)
        assert code == 0 and out.startswith("ingested 1  skipped 0"), (code, out, term)
        assert "sync: 100%" in term and "1/1 [" in term and "file/s" in term, (code, out, term)
        (root / "c/gamma.md").write_text("# Gamma\n\nA twice edited note about zebra fish.\n")
        code, out, term = cli_on_terminal("sync", "c", "--quiet", cwd=root, env=env)
        assert code == 0 and term == "" and out.startswith("ingested 1"), (code, out, term)
    finally:
        (root / "c/gamma.md").unlink()
        cli("sync", "--json", cwd=root, env=env)


# ---- scopes: repeatable, a union; relative paths against the current directory ---------------------------


def test_list_scope_union_relative_to_cwd(corpus):
    root, env = corpus
    r = cli("list", "--scope", "alpha0.md", "--scope", "../b", "--json", cwd=root / "a", env=env)
    assert r.returncode == 0, r.stderr
    got = sorted(Path(f["filePath"]).relative_to(root).as_posix() for f in json.loads(r.stdout)["files"])
    assert got == ["a/alpha0.md", "b/beta0.md", "b/beta1.md", "b/beta2.md"]
    r = cli("list", "--scope", "a", "--scope", "b/beta1.md", cwd=root, env=env)
    dated = [l.rsplit("  ", 1) for l in r.stdout.splitlines()]  # each indexed file ends with its date and its source
    assert r.returncode == 0 and [d[0] for d in dated] == [
        f"indexed        {n}" for n in ["a/alpha0.md", "a/alpha1.md", "a/alpha2.md", "b/beta1.md"]
    ]
    assert all(d[1].endswith("(file)") for d in dated)


def test_query_scopes_are_a_union(corpus):
    root, env = corpus
    r = cli("query", "zebra", "--scope", "a", "--scope", "b/beta2.md", "--top-k", "10", "--json", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    q = json.loads(r.stdout)
    assert {Path(h["source"]).relative_to(root).as_posix() for h in q["results"]} == {
        "a/alpha0.md",
        "a/alpha1.md",
        "a/alpha2.md",
        "b/beta2.md",
    }
    assert q["warnings"] == []
    # a scope that is neither an existing path here nor an id prefix: a warning, on stderr in text mode
    r = cli("query", "zebra", "--scope", "nowhere", cwd=root, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "no results"
    assert r.stderr.startswith("warn: scope 'nowhere'") and len(r.stderr.splitlines()) == 1, r.stderr


# ---- pipes: a reader that stops early ends the command quietly ---------------------------------------


def test_list_into_head_ends_quietly(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "many"
    root.mkdir()
    for i in range(1500):
        (root / f"a-rather-long-file-name-so-the-listing-outgrows-a-pipe-buffer-{i:05d}.md").write_bytes(b"x")
    env = _env(
        root, tmp_path / "idx", model_dir
    )  # ~130 kB of listing: more than a pipe holds, so the write hits the closed pipe
    r = subprocess.run(
        ["bash", "-c", f"set -o pipefail; '{CLI}' list | head -1"],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
    )
    assert r.stdout.startswith("not indexed") and len(r.stdout.splitlines()) == 1
    assert r.stderr == "" and r.returncode == 0, r.stderr


def test_query_into_a_closed_pipe_ends_quietly(corpus):
    root, env = corpus
    p = subprocess.Popen(
        [CLI, "query", "zebra"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root, env=env
    )
    p.stdout.close()  # the reader is gone before the first result is written
    err = p.stderr.read()
    p.wait(timeout=120)
    assert err == "" and p.returncode == 0, err


# ---- conventions: --version, --help, typed options -------------------------------------------------


def test_version_is_the_installed_distribution(tmp_path):
    r = cli("--version", cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout == f"minirag {version('minirag')}\n", (r.stdout, r.stderr)


@pytest.mark.parametrize("cmd", [None] + COMMANDS)
def test_help_shows_examples_and_the_environment_it_reads(cmd, tmp_path):
    "Each command's help names the variables that command reads; the whole table is in one place, `help env`."
    r = cli(*([cmd] if cmd else []), "--help", cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0 and r.stderr == ""
    assert "\nexamples:\n  minirag-mcp " + (cmd or "") in r.stdout, r.stdout
    assert "help env" in r.stdout, r.stdout
    named = {v for v in ENV_VARS if f"\n  {v} " in r.stdout}
    reads = {
        None: set(),
        "query": {"RAG_HYBRID_WEIGHT", "RAG_GROUPING", "MODEL_NAME", "BASE_DIR", "DB_PATH"},
        "ingest-url": {"ALLOW_PRIVATE_URLS", "MAX_FILE_SIZE"},
        "sync": {"CHUNK_TOKEN_BUDGET", "RAG_OCR_LANG"},
        "read": {"BASE_DIR", "DB_PATH"},
    }.get(cmd, set())
    assert reads <= named and named < set(ENV_VARS), (cmd, named)
    if cmd in ("read", "list", "delete", "read-neighbors", "sync", "ingest"):
        assert "RAG_HYBRID_WEIGHT" not in named and "ALLOW_PRIVATE_URLS" not in named, (cmd, named)


def test_help_env_is_the_whole_table(tmp_path):
    r = cli("help", "env", cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0 and r.stderr == ""
    assert all(f"\n  {v} " in r.stdout for v in ENV_VARS), [v for v in ENV_VARS if f"\n  {v} " not in r.stdout]
    r = cli("help", "query", cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.startswith("usage: minirag-mcp query"), r.stdout


@pytest.mark.parametrize(
    "typed,meant", [("qurey", "query"), ("synk", "sync"), ("stauts", "status"), ("ingest_url", "ingest-url")]
)
def test_a_mistyped_command_suggests_the_closest(typed, meant, tmp_path):
    r = cli(typed, "x", cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 2 and f"did you mean '{meant}'?" in r.stderr and r.stdout == "", r.stderr
    r = cli("help", typed, cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 2 and f"did you mean '{meant}'?" in r.stderr, r.stderr


def test_no_suggestion_for_a_word_unlike_any_command(tmp_path):
    r = cli("xyzzy", cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 2 and "invalid choice: 'xyzzy'" in r.stderr and "did you mean" not in r.stderr, r.stderr


# ---- a root that does not exist, an index never built ------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "hi"],
        ["sync"],
        ["list"],
        ["read", "a.md"],
        ["delete", "a.md"],
        ["ingest", "."],
        ["read-neighbors", "--file-path", "a.md", "--chunk-index", "0"],
    ],
)
def test_a_missing_root_is_a_configuration_error_and_nothing_is_created(argv, tmp_path, model_dir):
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    env = dict(env, BASE_DIR="./no-such-folder", MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent))
    r = cli(*argv, cwd=tmp_path, env=env)
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.startswith(
        f"error: the document root {os.path.realpath(tmp_path)}/no-such-folder does not exist"
    ), r.stderr
    assert r.stderr.count("\n") == 1 and "BASE_DIR" in r.stderr
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())  # no folder, no index
    if argv[0] == "query":  # --json: the same error as JSON on stdout
        r = cli(*argv, "--json", cwd=tmp_path, env=env)
        assert r.returncode == 1 and json.loads(r.stdout)["type"] == "ConfigError"


def test_status_reports_a_missing_root(tmp_path, model_dir):
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    (tmp_path / "afile").write_text("not a folder")
    for root, what in (("./no-such-folder", "does not exist"), ("./afile", "is not a folder")):
        r = cli("status", "--json", cwd=tmp_path, env=dict(env, BASE_DIR=root, MODEL_NAME=str(model_dir)))
        assert r.returncode == 0, r.stderr
        assert what in json.loads(r.stdout)["configError"], r.stdout
        r = cli("status", cwd=tmp_path, env=dict(env, BASE_DIR=root, MODEL_NAME=str(model_dir)))
        assert "configError: the document root" in r.stdout and what in r.stdout, r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_query_before_any_sync_says_to_run_sync(tmp_path, model_dir):
    root = tmp_path / "docs"
    write(root, "a.md", "# A\n\nSomething about zebras.\n")
    env = _env(root, tmp_path / "idx", model_dir)
    r = cli("query", "zebras", cwd=root, env=env)
    assert r.returncode == 0 and r.stdout == "no results\n", r.stdout
    want = f"warn: nothing is indexed yet under {os.path.realpath(root)}; run `minirag-mcp sync` first"
    assert r.stderr.startswith(want), r.stderr
    r = cli("query", "zebras", "--json", cwd=root, env=env)
    w = json.loads(r.stdout)["warnings"]
    assert len(w) == 1 and "run sync_start first" in w[0], w  # the tool's result, as MCP returns it
    assert not (tmp_path / "idx").exists()  # a query creates no index


def test_top_k_above_the_maximum_is_clamped_not_refused(corpus):
    "As the MCP tool does: a topK above 100 is clamped to 100; only 0 or a negative value is refused."
    root, env = corpus
    r = cli("query", "zebra", "--top-k", "100000000", "--json", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    q = json.loads(r.stdout)
    assert q["results"] and len(q["results"]) <= 100
    for bad in ("0", "-3"):
        r = cli("query", "zebra", "--top-k", bad, cwd=root, env=env)
        assert r.returncode == 2 and "argument -k/-n/--top-k:" in r.stderr and "at least 1" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "argv,option",
    [
        (["query", "x", "--top-k", "abc"], "-k/-n/--top-k"),
        (["query", "x", "--top-k", "0"], "-k/-n/--top-k"),
        (["query", "x", "--weight", "2"], "--weight"),
        (["query", "x", "--weight", "nan"], "--weight"),
        (["read-neighbors", "--chunk-index", "x"], "--chunk-index"),
        (["read-neighbors", "--chunk-index", "1", "--before", "-1"], "--before"),
        (["read-neighbors", "--chunk-index", "1", "--after", "51"], "--after"),
        (["eval", "d", "--weights", "0,5"], "--weights"),
        (["eval", "d", "--limit-queries", "0"], "--limit-queries"),
    ],
)
def test_bad_values_are_usage_errors(argv, option, tmp_path):
    r = cli(*argv, cwd=tmp_path, env=dict(os.environ))
    assert (
        r.returncode == 2
        and r.stderr.startswith("usage: minirag-mcp")
        and f"argument {option}:" in r.stderr
        and r.stdout == ""
    )
    assert "Traceback" not in r.stderr
    r = cli(*argv, "--json", cwd=tmp_path, env=dict(os.environ))
    e = json.loads(r.stdout)
    assert r.returncode == 2 and e["type"] == "UsageError" and f"argument {option}:" in e["error"]


# ---- errors: one line on stderr and, with --json, a JSON object on stdout ----------------------------------


def test_unexpected_error_prints_one_line_and_json(corpus, tmp_path):
    root, env = corpus
    (tmp_path / "sitecustomize.py").write_text(  # a fault in the library the CLI cannot foresee
        "import minirag.api\n"
        "def _boom(self, *a, **k): raise RuntimeError('forced failure for the test')\n"
        "minirag.api.Index.list_files = _boom\n"
    )
    env = dict(env, PYTHONPATH=str(tmp_path))
    want = "unexpected RuntimeError: forced failure for the test (set MINIRAG_DEBUG=1 for details)"
    r = cli("list", cwd=root, env=env)
    assert r.returncode == 1 and r.stdout == "" and r.stderr == f"error: {want}\n"
    r = cli("list", "--json", cwd=root, env=env)
    assert r.returncode == 1 and r.stderr == f"error: {want}\n"
    assert json.loads(r.stdout) == {"error": want, "type": "RuntimeError"}


def test_minirag_error_with_json_is_json(corpus):
    root, env = corpus
    r = cli("read", "a/nothere.md", "--json", cwd=root, env=env)
    assert r.returncode == 1 and r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1
    e = json.loads(r.stdout)
    # the same message; the line for people names the command where the JSON keeps the MCP tool's words
    from minirag.terminal import for_people

    said = r.stderr[len("error: ") :].rstrip("\n")
    assert e["type"] == "MiniragError" and for_people(e["error"]) == said and "nothere.md" in e["error"]


# ---- R-L1: --json carries the fields of the MCP tool (the library call both adapt) ---------------------------


def test_json_is_the_library_result(corpus):
    from minirag.api import Index

    root, env = corpus
    got = {
        c: json.loads(cli(*a, "--json", cwd=root, env=env).stdout)
        for c, a in [("status", ["status"]), ("query", ["query", "zebra stripes", "--top-k", "3"]), ("list", ["list"])]
    }
    ix = Index.open(env=env)
    try:
        want = dict(
            status=to_wire(ix.status()), query=to_wire(ix.query("zebra stripes", 3)), list=to_wire(ix.list_files())
        )
    finally:
        ix.close()
    want = json.loads(json.dumps(want, default=str))
    assert set(got["status"]) == set(want["status"])
    assert got["list"] == want["list"]

    # scores/distances are floats from two processes: equal up to float noise, everything else exactly
    def plain(r):
        return [{k: v for k, v in h.items() if k not in ("score", "distance")} for h in r["results"]]

    assert plain(got["query"]) == plain(want["query"])
    assert {k: v for k, v in got["query"].items() if k != "results"} == {
        k: v for k, v in want["query"].items() if k != "results"
    }
    for g, w in zip(got["query"]["results"], want["query"]["results"]):
        assert g["score"] == pytest.approx(w["score"], abs=1e-5)
        assert (g["distance"] is None) == (w["distance"] is None)
        if g["distance"] is not None:
            assert g["distance"] == pytest.approx(w["distance"], abs=1e-5)


# ---- demo: nothing left behind --------------------------------------------------------------------


def test_demo_leaves_no_temp_folder(tmp_path, model_dir):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict({k: v for k, v in os.environ.items() if k not in ENV_VARS}, TMPDIR=str(tmp))
    r = cli("demo", "--cache-dir", str(model_dir.parent), cwd=tmp_path, env=env)
    assert r.returncode == 0 and "\n1. " in r.stdout, (r.stdout, r.stderr)
    # (fastembed's empty `fastembed_cache` and onnxruntime's `.ses` are theirs, created by any model load)
    assert [p.name for p in tmp.iterdir() if p.name not in ("fastembed_cache", ".ses")] == []


def test_a_shell_query_does_not_import_pandas_and_still_answers(corpus):
    """DuckDB's parameter binding imports pandas (0.3 s) when it is installed; a read-only console command blocks
    that, a called main() does not."""
    root, env = corpus
    # reported when the command is done: main() ends without the interpreter's teardown
    probe = (
        "import sys; import minirag.cli as C; run = C.run; "
        "C.run = lambda argv: (c := run(argv), "
        "print('PANDAS', sys.modules.get('pandas') is not None, file=sys.stderr))[0]; "
        "sys.argv = ['minirag-mcp', *sys.argv[1:]]; C.main()"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe, "query", "zebra stripes", "--json"],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["source"].startswith(str(root / "b"))
    assert "PANDAS False" in r.stderr, r.stderr
    called = (
        "import sys; from minirag.cli import main\n"
        "try: main(['query', 'zebra', '--json'])\nexcept SystemExit: pass\n"
        "import pandas; print('PANDAS', pandas.__name__, file=sys.stderr)"
    )
    r = subprocess.run([sys.executable, "-c", called], capture_output=True, text=True, cwd=root, env=env, timeout=300)
    assert "PANDAS pandas" in r.stderr, r.stderr  # nothing blocked for a caller that may want pandas afterwards


# ---- the vector snapshot one-shot queries keep beside the index (06a1_snapshot) --------------------------------


def test_one_shot_queries_keep_a_vector_snapshot_that_never_serves_an_old_text(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    for n, t in DOCS.items():
        write(root, n, t)
    env = _env(root, tmp_path / "idx", model_dir)
    snap = tmp_path / "idx" / "index.vectors"

    def vector_top(q, **extra):
        r = cli("query", q, "--weight", "0", "--top-k", "3", "--json", cwd=root, env=dict(env, **extra))
        assert r.returncode == 0, r.stderr
        return [(h["source"], h["text"], h["distance"]) for h in json.loads(r.stdout)["results"]]

    assert cli("sync", "--json", cwd=root, env=env).returncode == 0
    first = vector_top("zebra crossings")
    assert snap.is_file()
    assert (
        vector_top("zebra crossings") == first == vector_top("zebra crossings", MINIRAG_HOLD_VECTORS="1")
    )  # snapshot = a loaded matrix
    new = write(root, "c/keeper.md", "# Lighthouse\n\nThe lighthouse keeper polishes the brass lamp every evening.\n")
    assert cli("ingest", str(new), "--json", cwd=root, env=env).returncode == 0
    assert vector_top("lighthouse keeper lamp")[0][0] == str(new)  # the stale snapshot follows a one-file ingest
    write(root, "c/keeper.md", "# Basalt\n\nVolcanic basalt columns form as thick lava cools and cracks.\n")
    assert cli("sync", "--json", cwd=root, env=env).returncode == 0
    hits = vector_top("lighthouse keeper lamp")
    assert not any("lighthouse" in t for _, t, _ in hits), hits  # the rewritten file's old text is gone
    assert vector_top("volcanic basalt lava")[0][0] == str(new)
    new.unlink()
    assert cli("sync", "--json", cwd=root, env=env).returncode == 0
    assert str(new) not in {s for s, _, _ in vector_top("volcanic basalt lava")}
    assert vector_top("zebra stripes") == vector_top("zebra stripes", MINIRAG_HOLD_VECTORS="1")
