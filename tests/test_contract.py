"""The reference contract from outside (issue 12 items 5-8, 10-11; issue 13 item 5): a real `minirag-mcp` over stdio,
the CLI, the packaged model."""

import http.server, json, os, pty, select, signal, subprocess, sys, threading, time
from importlib.metadata import version
from pathlib import Path

import anyio
import duckdb
import jsonschema
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from conftest import write

SERVER_CMD = str(Path(sys.executable).parent / "minirag-mcp")
REFERENCE_STATUS = ("chunkCount", "sourceCount", "staleChunkCount", "schemeWarning", "version", "configError")


def text(r) -> str:
    return r.content[0].text if r.content else ""


def ok(r) -> dict:
    assert not r.is_error, text(r)
    return r.structured_content


def err(r) -> str:
    assert r.is_error, text(r)
    assert "Traceback" not in text(r) and "\n" not in text(r)
    return text(r)


def env_for(root: Path, model_dir: Path, **extra) -> dict:
    keep = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}  # lets the suite run against another checkout
    return {**keep, "BASE_DIR": str(root), "MODEL_NAME": str(model_dir), "CACHE_DIR": str(model_dir.parent), **extra}


def stdio(root, model_dir, body, **extra):
    "Run `body(client)` against a real `minirag-mcp` subprocess."
    params = StdioServerParameters(command=SERVER_CMD, args=[], env=env_for(root, model_dir, **extra))

    async def main():
        async with Client(params, mode="auto", read_timeout_seconds=120) as c:
            return await body(c)

    return anyio.run(main)


def cli(root, model_dir, *args, **extra):
    p = subprocess.run(
        [SERVER_CMD, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env_for(root, model_dir, **extra)},
        timeout=180,
    )
    return p


# ---------------------------------------------------------------- status names (item 5)


def test_status_carries_the_reference_names(root, model_dir):
    write(root, "a.md", "# Apples\n\nApples are red and crisp.\n")
    write(root, "b.md", "# Bananas\n\nBananas are yellow.\n")
    assert cli(root, model_dir, "ingest", str(root)).returncode == 0

    async def body(c):
        return ok(await c.call_tool("status", {}))

    st = stdio(root, model_dir, body)
    js = json.loads(cli(root, model_dir, "status", "--json").stdout)
    for s in (st, js):
        assert set(REFERENCE_STATUS) <= set(s), set(REFERENCE_STATUS) - set(s)
        assert (s["sourceCount"], s["staleChunkCount"], s["schemeWarning"], s["configError"]) == (2, 0, None, None)
        assert s["chunkCount"] >= 2 and s["version"] == version("minirag")
    # a broken configuration: {version, configError}, exit 0
    p = cli(root, model_dir, "status", "--json", BASE_DIRS="[not json")
    s = json.loads(p.stdout)
    assert p.returncode == 0 and s["version"] == version("minirag") and "BASE_DIRS" in s["configError"]


def test_scheme_warning_and_outdated_scheme_are_not_stale(root, model_dir):
    """Chunks cut by an older scheme: staleChunkCount + schemeWarning, state outdatedScheme; a file changed on disk:
    state stale."""
    a, b = (
        write(root, "a.md", "# Apples\n\nApples are red.\n"),
        write(root, "b.md", "# Bananas\n\nBananas are yellow.\n"),
    )
    c = write(root, "c.md", "# Cherries\n\nCherries are small.\n")
    assert cli(root, model_dir, "ingest", str(root)).returncode == 0
    con = duckdb.connect(str(root / ".minirag" / "index.duckdb"))
    con.execute("UPDATE sources SET scheme = scheme - 1 WHERE source = ?", [str(a)])
    con.execute("UPDATE chunks SET scheme = scheme - 1 WHERE source = ?", [str(a)])
    con.close()
    b.write_text("# Bananas\n\nBananas are yellow, then brown.\n")  # bytes changed since indexing
    os.utime(c, (time.time() + 60, time.time() + 60))  # only the mtime moved: same bytes

    async def body(cl):
        return ok(await cl.call_tool("status", {})), ok(await cl.call_tool("list_files", {}))

    st, ls = stdio(root, model_dir, body)
    assert st["staleChunkCount"] >= 1 and "older chunking scheme" in st["schemeWarning"]
    assert {f["displayPath"]: f["state"] for f in ls["files"]} == {
        "a.md": "outdatedScheme",
        "b.md": "stale",
        "c.md": "indexed",
    }


# ---------------------------------------------------------------- read_file tells three problems apart (item 6)


def test_read_file_distinguishes_missing_folder_and_unindexed(root, model_dir):
    write(root, "in.md", "# In\n\nIndexed text.\n")
    write(root, "later.md", "# Later\n\nNot ingested yet.\n")
    (root / "sub").mkdir()
    assert cli(root, model_dir, "ingest", str(root / "in.md")).returncode == 0

    async def body(c):
        out = {}
        for name in ("typo.md", "sub", "later.md", "in.md"):
            r = await c.call_tool("read_file", {"filePath": str(root / name)})
            out[name] = text(r) if r.is_error else ok(r)
        out["outside-existing"] = err(await c.call_tool("read_file", {"filePath": "/etc/hostname"}))
        out["outside-missing"] = err(await c.call_tool("read_file", {"filePath": "/etc/no-such-file-here"}))
        return out

    m = stdio(root, model_dir, body)
    assert "does not exist" in m["typo.md"] and "not in the index" not in m["typo.md"]
    assert "is not a file" in m["sub"] and "not in the index" not in m["sub"]
    assert "is not in the index" in m["later.md"] and "ingest it or run sync" in m["later.md"]
    assert "Indexed text" in m["in.md"]["text"]
    # R-S1 first: outside the roots one refusal, whether the target exists or not (no probing)
    assert m["outside-existing"].replace("/etc/hostname", "X") == m["outside-missing"].replace(
        "/etc/no-such-file-here", "X"
    )
    assert "does not exist" not in m["outside-missing"]
    # the CLI's `read` says the same
    p = cli(root, model_dir, "read", str(root / "typo.md"))
    assert p.returncode == 1 and "does not exist" in p.stderr
    p = cli(root, model_dir, "read", str(root / "later.md"))
    assert p.returncode == 1 and "not in the index (ingest it or run sync)" in p.stderr


# ---------------------------------------------------------------- scopes (items 7, 8)


def _corpus(root):
    write(root, "proj/plan.md", "# Plan\n\nThe heron-7 cluster moves in March.\n")
    write(root, "project-secret/plan.md", "# Secret plan\n\nThe heron-7 cluster password rotates weekly.\n")
    write(root, "notes/ops.md", "# Ops\n\nheron-7 runs the nightly backups.\n")


def test_list_files_scope_is_separator_aware_and_a_union(root, model_dir):
    _corpus(root)

    async def body(c):
        one = ok(await c.call_tool("list_files", {"scope": str(root / "proj")}))
        both = ok(await c.call_tool("list_files", {"scope": [str(root / "proj") + "/", str(root / "notes/ops.md")]}))
        rel = ok(await c.call_tool("list_files", {"scope": "proj"}))
        return one, both, rel

    one, both, rel = stdio(root, model_dir, body)
    assert [f["displayPath"] for f in one["files"]] == ["proj/plan.md"]  # never project-secret/
    assert sorted(f["displayPath"] for f in both["files"]) == ["notes/ops.md", "proj/plan.md"]
    assert rel["files"] == [] and "absolute" in rel["warnings"][0]


def test_query_scope_union_and_relative_scope_warning(root, model_dir):
    _corpus(root)
    assert cli(root, model_dir, "ingest", str(root)).returncode == 0

    async def body(c):
        union = ok(
            await c.call_tool(
                "query_documents", {"query": "heron-7", "topK": 10, "scope": [str(root / "proj"), str(root / "notes")]}
            )
        )
        rel = ok(await c.call_tool("query_documents", {"query": "heron-7", "scope": "proj"}))
        mixed = ok(await c.call_tool("query_documents", {"query": "heron-7", "scope": ["proj", str(root / "notes")]}))
        return union, rel, mixed

    union, rel, mixed = stdio(root, model_dir, body)
    assert (
        sorted(s["displayPath"] for s in union["sources"]) == ["notes/ops.md", "proj/plan.md"]
        and union["warnings"] == []
    )
    assert (
        rel["results"] == []
        and len(rel["warnings"]) == 1
        and "'proj'" in rel["warnings"][0]
        and "absolute" in rel["warnings"][0]
    )
    assert [s["displayPath"] for s in mixed["sources"]] == ["notes/ops.md"] and "'proj'" in mixed["warnings"][0]


# ---------------------------------------------------------------- wrong words (item 10)


def test_sync_start_relative_path_names_path(root, model_dir):
    async def body(c):
        return err(await c.call_tool("sync_start", {"path": "docs/sub"}))

    msg = stdio(root, model_dir, body)
    assert msg.startswith("path must be absolute") and "filePath" not in msg


def test_model_change_refusal_names_both_models_and_dimensions(root, model_dir):
    write(root, "a.md", "# Apples\n\nApples are red.\n")
    assert cli(root, model_dir, "ingest", str(root)).returncode == 0
    con = duckdb.connect(str(root / ".minirag" / "index.duckdb"))  # as if built by another model
    con.execute("UPDATE meta SET value = 'acme/wide-embedder' WHERE key = 'model_id'")
    con.execute("UPDATE meta SET value = '768' WHERE key = 'dim'")
    con.close()

    async def body(c):
        return err(await c.call_tool("query_documents", {"query": "apples"}))

    msg = stdio(root, model_dir, body)
    assert "acme/wide-embedder" in msg and "768" in msg and "all-MiniLM-L6-v2-int8" in msg and "384" in msg


# ---------------------------------------------------------------- schemas (issue 13 item 5)


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (
            b"<html><head><title>Pump manual</title></head>"
            b"<body><p>The PX-77 pump needs oil every 200 hours.</p></body></html>"
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def page_url():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/pump.html"
    srv.shutdown()


def test_schemas_carry_ranges_and_every_result_matches_its_output_schema(root, model_dir, page_url):
    f = write(root, "ops/runbook.md", "# Runbook\n\n## Errors\n\nERR_CONNECTION_REFUSED means the database is down.\n")
    (root / "broken.docx").write_bytes(b"PK\x03\x04" + bytes(range(256)) * 8)  # a zip signature and junk

    async def body(c):
        tools = {t.name: t for t in (await c.list_tools()).tools}
        calls = [
            ("status", {}),
            ("ingest_file", {"filePath": str(f)}),
            ("ingest_data", {"content": "# Note\n\nheron-7", "source": "notes/n"}),
            ("query_documents", {"query": "database down", "topK": 500}),
            ("read_chunk_neighbors", {"filePath": str(f), "chunkIndex": 0}),
            ("read_file", {"source": "notes/n"}),
            ("ingest_url", {"url": page_url}),
            ("list_files", {}),
            ("sync_start", {}),
        ]
        got = [(n, ok(await c.call_tool(n, a))) for n, a in calls]
        job = got[-1][1]["jobId"]
        while (s := ok(await c.call_tool("sync_status", {"jobId": job})))["state"] == "running":
            await anyio.sleep(0.1)
        got += [
            ("sync_status", s),
            ("delete_file", ok(await c.call_tool("delete_file", {"source": "notes/n"}))),
            ("list_files", ok(await c.call_tool("list_files", {}))),
        ]  # now with a file whose bytes failed to ingest
        return tools, got

    tools, got = stdio(root, model_dir, body, ALLOW_PRIVATE_URLS="1")
    props = lambda n: tools[n].input_schema["properties"]
    assert (props("query_documents")["topK"]["minimum"], props("query_documents")["topK"]["maximum"]) == (1, 100)
    for p in ("before", "after"):
        assert (props("read_chunk_neighbors")[p]["minimum"], props("read_chunk_neighbors")[p]["maximum"]) == (0, 50)
    assert props("read_chunk_neighbors")["chunkIndex"]["minimum"] == 0
    assert set(props("ingest_data")["format"]["enum"]) == {"markdown", "text", "html"}
    assert "scope" in props("list_files")
    assert {n for n, t in tools.items() if t.output_schema} == set(tools)
    for name, result in got:
        jsonschema.validate(result, tools[name].output_schema)
    assert {n for n, _ in got} == set(tools)
    q = dict(got)["query_documents"]
    assert 1 <= len(q["results"]) <= 100  # topK above 100 is clamped (R-Q3), as the schema's maximum says
    assert "failed" in {x["state"] for x in got[-1][1]["files"]}
    # the sync's errors, in the reference's shape: the job's own field, each {source, error}; not in its counts
    job = tools["sync_status"].output_schema
    assert job["required"][-1] == "errors" and job["$defs"]["SyncError"]["required"] == ["source", "error"]
    assert [e["source"] for e in dict(got)["sync_status"]["errors"]] == [str(root / "broken.docx")]
    assert "errors" not in dict(got)["sync_status"]["counts"]
    roots = tools["status"].output_schema["properties"]["rootStates"]  # each root with its state
    assert roots["anyOf"][0]["items"]["$ref"] == "#/$defs/RootState", roots
    assert "stale" in tools["list_files"].description and "outdatedScheme" in tools["list_files"].description
    assert all(k in tools["status"].description for k in REFERENCE_STATUS)


# ---------------------------------------------------------------- a bare minirag-mcp in a terminal (item 11)


def _piped_stdin_gets_no_hint(tmp_path):
    "As an MCP client starts it: nothing but frames on stdout, no hint on stderr."
    p = subprocess.Popen(
        [SERVER_CMD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "BASE_DIR": str(tmp_path)},
    )
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    out, errout = p.communicate((json.dumps(init) + "\n").encode(), timeout=60)
    assert p.returncode == 0
    assert [json.loads(l)["id"] for l in out.splitlines()] == [0]
    assert b"--help" not in errout and b"Traceback" not in errout


def test_bare_command_in_a_terminal_says_what_it_is_and_quits_on_ctrl_c(tmp_path):
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr are the terminal
        os.environ["BASE_DIR"] = str(tmp_path)
        os.execv(SERVER_CMD, [SERVER_CMD])
    seen = b""

    def read_for(secs):
        nonlocal seen
        end = time.monotonic() + secs
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    return

    try:
        deadline = time.monotonic() + 30
        while b"--help" not in seen and time.monotonic() < deadline:
            read_for(0.2)
        line = seen.decode(errors="replace")
        assert "MCP server" in line and "minirag-mcp --help" in line and line.count("\n") == 1, line
        os.write(fd, b"\x03")  # Ctrl-C, through the terminal's line discipline
        t0, status = time.monotonic(), None
        while time.monotonic() - t0 < 5:
            p, st = os.waitpid(pid, os.WNOHANG)
            if p:
                status = os.waitstatus_to_exitcode(st)
                break
            read_for(0.05)
        assert status in (0, 130), f"still running {time.monotonic() - t0:.1f} s after Ctrl-C"
        assert b"Traceback" not in seen
        _piped_stdin_gets_no_hint(tmp_path)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
