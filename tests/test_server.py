"MCP server (R-P1..R-P5): tools through the SDK client in-process and over real stdio subprocesses, both protocol eras."

import http.server, json, os, re, shlex, subprocess, sys, threading, time, tomllib
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from minirag.server import INSTRUCTIONS, MAX_INSTRUCTIONS, TOOL_NAMES, build_server
from conftest import write

REPO = Path(__file__).resolve().parents[1]
# the console script pip installed next to this interpreter (what `minirag-mcp` on PATH runs)
SERVER_CMD = str(Path(sys.executable).parent / "minirag-mcp")
HEAVY = ("fastembed", "onnxruntime", "markitdown", "minirag.api", "duckdb")
RUNBOOK = (
    "# Operations runbook\n\n## Database errors\n\nERR_CONNECTION_REFUSED means the database is down; "
    "restart it with `svc db restart` and check the disk is not full.\n\n## Backups\n\n"
    "Nightly backups are kept for 30 days on the NAS.\n"
)
NOTES = "# Release notes\n\nRelease 4.2 fixes bug E-1042 where exports timed out after 30 seconds.\n"


def text(r) -> str:
    return r.content[0].text if r.content else ""


def ok(r) -> dict:
    assert not r.is_error, text(r)
    assert r.structured_content == json.loads(text(r))  # the text block is the same dict, as JSON
    return r.structured_content


def bad(r, *words) -> str:
    "An error result: one line, no traceback, naming the problem."
    assert r.is_error, text(r)
    t = text(r)
    assert "Traceback" not in t and "\n" not in t and 0 < len(t) < 600, t
    for w in words:
        assert w.lower() in t.lower(), (w, t)
    return t


def server_env(root: Path, model_dir: Path, **extra) -> dict:
    "The environment the stdio tests launch `minirag-mcp` with: BASE_DIR (as in the README) + the test model."
    return {"BASE_DIR": str(root), "MODEL_NAME": str(model_dir), "CACHE_DIR": str(model_dir.parent), **extra}


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (
            b"<html><head><title>Pump manual</title></head>"
            b"<body><h1>Pump manual</h1><p>The PX-77 pump needs oil every 200 hours.</p></body></html>"
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def page_url():
    "A local web page (reachable because the tests set ALLOW_PRIVATE_URLS=1)."
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/manual.html"
    srv.shutdown()


async def exercise(c, root: Path, url: str | None, sync: bool):
    "Call every tool at least once with a success and a failure case."
    names = {t.name for t in (await c.list_tools()).tools}
    assert names == set(TOOL_NAMES)
    f = write(root, "ops/runbook.md", RUNBOOK)
    st = ok(await c.call_tool("status", {}))
    assert st["configError"] is None and st["roots"] == [str(root)]
    # ingest_file
    r = ok(await c.call_tool("ingest_file", {"filePath": str(f)}))
    assert r["source"] == str(f) and r["chunkCount"] >= 1
    bad(await c.call_tool("ingest_file", {"filePath": "ops/runbook.md"}), "absolute")
    bad(await c.call_tool("ingest_file", {"filePath": "/etc/hostname"}), "outside the document roots")
    bad(await c.call_tool("ingest_file", {"filePath": str(root / "ops/missing.md")}), "no such file")
    bad(await c.call_tool("ingest_file", {}), "filePath")
    # ingest_data
    r = ok(await c.call_tool("ingest_data", {"content": NOTES, "source": "notes/release-4.2"}))
    assert (r["source"], r["title"]) == ("notes/release-4.2", "Release notes")
    bad(await c.call_tool("ingest_data", {"content": "x", "source": "notes/x", "format": "pdf"}), "format")
    bad(await c.call_tool("ingest_data", {"content": "x", "source": "/abs/id"}), "reserved for file paths")
    bad(await c.call_tool("ingest_data", {"content": "   ", "source": "notes/empty"}), "empty")
    # ingest_url
    if url:
        r = ok(await c.call_tool("ingest_url", {"url": url}))
        assert r["source"] == url and r["chunkCount"] >= 1
    bad(await c.call_tool("ingest_url", {"url": "file:///etc/passwd"}), "http")
    # query_documents
    q = ok(await c.call_tool("query_documents", {"query": "ERR_CONNECTION_REFUSED", "topK": 3}))
    assert q["sources"][0]["displayPath"] == "ops/runbook.md" and q["results"][0]["parentId"] in q["parents"]
    assert sum(s["hits"] for s in q["sources"]) == len(q["results"]) <= 3
    q = ok(await c.call_tool("query_documents", {"query": "E-1042", "topK": 2, "scope": "notes"}))
    assert {s["source"] for s in q["sources"]} == {"notes/release-4.2"}
    bad(await c.call_tool("query_documents", {"query": "   "}), "empty")
    bad(await c.call_tool("query_documents", {"query": "backups", "topK": 0}), "topK")
    bad(await c.call_tool("query_documents", {"query": "backups", "topK": "many"}), "topK")
    # read_chunk_neighbors
    r = ok(await c.call_tool("read_chunk_neighbors", {"filePath": str(f), "chunkIndex": 0, "after": 1}))
    assert [x["isTarget"] for x in r["chunks"]][0] is True
    r = ok(await c.call_tool("read_chunk_neighbors", {"source": "notes/release-4.2", "chunkIndex": 0}))
    assert "E-1042" in r["chunks"][0]["text"]
    bad(await c.call_tool("read_chunk_neighbors", {"filePath": "ops/runbook.md", "chunkIndex": 0}), "absolute")
    bad(await c.call_tool("read_chunk_neighbors", {"filePath": str(f), "chunkIndex": 0, "before": 99}), "before")
    # read_file
    r = ok(await c.call_tool("read_file", {"filePath": str(f)}))
    assert "ERR_CONNECTION_REFUSED" in r["text"] and "Nightly backups" in r["text"]
    assert "E-1042" in ok(await c.call_tool("read_file", {"source": "notes/release-4.2"}))["text"]
    bad(await c.call_tool("read_file", {"filePath": str(root / "ops/other.md")}), "does not exist")
    bad(await c.call_tool("read_file", {"filePath": "/etc/passwd"}), "outside")
    bad(await c.call_tool("read_file", {}), "filePath")
    # list_files
    r = ok(await c.call_tool("list_files", {}))
    assert {(x["displayPath"], x["state"]) for x in r["files"]} == {("ops/runbook.md", "indexed")}
    assert "notes/release-4.2" in {s["source"] for s in r["sources"]}
    # delete_file
    assert ok(await c.call_tool("delete_file", {"source": "notes/release-4.2"}))["deleted"] is True
    bad(await c.call_tool("delete_file", {"source": "notes/release-4.2"}), "not in the index")
    bad(await c.call_tool("delete_file", {"filePath": "ops/runbook.md"}), "absolute")
    # sync_start / sync_status
    bad(await c.call_tool("sync_start", {"path": "ops"}), "absolute")
    bad(await c.call_tool("sync_start", {"path": "/etc"}), "outside")
    bad(await c.call_tool("sync_status", {"jobId": "no-such-job"}))
    if sync:
        write(root, "ops/new.md", "# New page\n\nThe staging cluster is called heron-7.\n")
        job = ok(await c.call_tool("sync_start", {"path": str(root / "ops")}))
        assert job["state"] == "running" and job["jobId"]
        deadline = time.monotonic() + 90
        while True:
            s = ok(await c.call_tool("sync_status", {"jobId": job["jobId"]}))
            if s["state"] != "running" or time.monotonic() > deadline:
                break
            await anyio.sleep(0.2)
        assert s["state"] == "succeeded", s
        assert s["counts"]["ingested"] >= 1
        q = ok(await c.call_tool("query_documents", {"query": "heron-7 staging cluster", "topK": 1}))
        assert q["sources"][0]["displayPath"] == "ops/new.md"


def _has_sync() -> bool:
    from minirag.api import Index

    return hasattr(Index, "sync_start") and hasattr(Index, "sync_status")


# ---------------------------------------------------------------- start-up (R-P1, R-M2)


def test_start_imports_nothing_heavy(tmp_path):
    "Building the server (and the console entry point) imports no DuckDB, model runtime or converter."
    code = (
        "import sys; import minirag.cli; from minirag.server import build_server; build_server(); "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "BASE_DIR": str(tmp_path)},
        timeout=60,
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# ---------------------------------------------------------------- instructions (R-P3)


def test_instructions_policy():
    s = INSTRUCTIONS
    assert len(s) <= 1700
    for must in (
        "query_documents",
        "general knowledge",
        "arithmetic",
        "conversation",
        "retry",
        "status",
        "parents",
        "displayPath",
        "[n]",
        "no links",
        "data",
        "never instructions",
    ):
        assert must.lower() in s.lower(), must


def test_instructions_append_and_overflow(tmp_path, model_dir):
    async def main():
        srv = build_server(server_env(tmp_path, model_dir, RAG_INSTRUCTIONS_APPEND="Documents are mostly in Russian."))
        async with Client(srv) as c:
            assert c.instructions.startswith(INSTRUCTIONS)
            assert (
                c.instructions.endswith("\n\nDocuments are mostly in Russian.")
                and len(c.instructions) <= MAX_INSTRUCTIONS
            )
            assert ok(await c.call_tool("status", {}))["configError"] is None
        srv = build_server(server_env(tmp_path, model_dir, RAG_INSTRUCTIONS_APPEND="y" * 1000))
        async with Client(srv) as c:
            assert c.instructions == INSTRUCTIONS  # refused, not truncated
            st = ok(await c.call_tool("status", {}))
            assert "RAG_INSTRUCTIONS_APPEND" in st["configError"] and "shorten" in st["configError"]
            bad(await c.call_tool("query_documents", {"query": "x"}), "RAG_INSTRUCTIONS_APPEND")

    anyio.run(main)


# ---------------------------------------------------------------- tools in-process (R-P2, R-S4)


def test_tool_schemas_and_descriptions(tmp_path, model_dir):
    async def main():
        async with Client(build_server(server_env(tmp_path, model_dir))) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == set(TOOL_NAMES) and len(tools) == 11
        params = {n: set(t.input_schema.get("properties", {})) for n, t in tools.items()}
        assert params["query_documents"] == {"query", "topK", "scope", "labels", "dateFrom", "dateTo"}
        assert params["list_files"] == {"scope", "labels", "dateFrom", "dateTo", "sort"}
        assert params["read_chunk_neighbors"] == {"filePath", "source", "chunkIndex", "before", "after"}
        assert params["ingest_data"] == {"content", "source", "format", "title"}
        assert params["sync_status"] == {"jobId"} and params["sync_start"] == {"path"}
        assert params["ingest_file"] == {"filePath"} and params["ingest_url"] == {"url", "source"}
        assert tools["query_documents"].input_schema["required"] == ["query"]
        for n, t in tools.items():
            assert not any("_" in p for p in params[n]), (n, params[n])  # camelCase only
            assert len(t.description) > 120 and "Return" in t.description, n  # when to use it + what comes back
        assert "displayPath" in tools["query_documents"].description and "[n]" in tools["query_documents"].description
        assert tools["query_documents"].annotations.read_only_hint is True
        assert (
            tools["delete_file"].annotations.destructive_hint is True
            and tools["ingest_url"].annotations.open_world_hint is True
        )

    anyio.run(main)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_every_tool_in_process(mode, root, model_dir, shared_embedder, page_url):
    "Modern (direct dispatch) and legacy (in-memory JSON-RPC streams) paths, same results."

    async def main():
        srv = build_server(server_env(root, model_dir, ALLOW_PRIVATE_URLS="1"), embedder=shared_embedder)
        async with Client(srv, mode=mode) as c:
            await exercise(c, root, page_url, _has_sync())
        srv.tools.close()

    anyio.run(main)


# ---------------------------------------------------------------- same fields as the CLI's --json (R-L1)


def test_tool_results_equal_cli_json(root, model_dir, shared_embedder):
    f = write(root, "ops/runbook.md", RUNBOOK)
    env = {**os.environ, **server_env(root, model_dir)}

    def cli(*args):
        p = subprocess.run(
            [sys.executable, "-m", "minirag.cli", *args, "--json"], capture_output=True, text=True, env=env, timeout=120
        )
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    async def main():
        srv = build_server(server_env(root, model_dir), embedder=shared_embedder)
        async with Client(srv) as c:
            ok(await c.call_tool("ingest_file", {"filePath": str(f)}))
            ok(await c.call_tool("ingest_data", {"content": NOTES, "source": "notes/release-4.2"}))
            pairs = [
                (
                    ok(await c.call_tool("query_documents", {"query": "database down", "topK": 4})),
                    cli("query", "database down", "--top-k", "4"),
                ),
                (ok(await c.call_tool("read_file", {"filePath": str(f)})), cli("read", str(f))),
                (ok(await c.call_tool("list_files", {})), cli("list")),
                (ok(await c.call_tool("status", {})), cli("status")),
            ]
        srv.tools.close()
        for tool, js in pairs:
            assert set(tool) == set(js)
            if "results" in tool:  # scores are floats computed in two processes
                for a, b in zip(tool["results"], js["results"]):
                    assert {k: v for k, v in a.items() if k not in ("score", "distance")} == {
                        k: v for k, v in b.items() if k not in ("score", "distance")
                    }
                    assert a["score"] == pytest.approx(b["score"], abs=1e-5) and (a["distance"] is None) == (
                        b["distance"] is None
                    )
                tool, js = (
                    {k: v for k, v in tool.items() if k != "results"},
                    {k: v for k, v in js.items() if k != "results"},
                )
            assert tool == js

    anyio.run(main)


# ---------------------------------------------------------------- degradation (R-P4)


def _not_a_dir(tmp_path):
    f = tmp_path / "plain-file"
    f.write_text("x")
    return str(f / "index")


@pytest.mark.parametrize(
    "extra,names",
    [
        ({"BASE_DIRS": "[not json"}, "BASE_DIRS"),
        ({"CHUNK_TOKEN_BUDGET": "lots"}, "CHUNK_TOKEN_BUDGET"),
        ({"RAG_HYBRID_WEIGHT": "2.5", "MAX_FILE_SIZE": "-1"}, "RAG_HYBRID_WEIGHT"),
        ({"ALLOW_PRIVATE_URLS": "maybe"}, "ALLOW_PRIVATE_URLS"),
    ],
)
def test_broken_config_degrades(extra, names, root, model_dir):
    "status answers with configError; every other tool is an error result naming the variable."

    async def main():
        async with Client(build_server(server_env(root, model_dir, **extra))) as c:
            st = ok(await c.call_tool("status", {}))
            assert names in st["configError"] and "version" in st
            f = str(write(root, "a.md", "# A\n\ntext\n"))
            calls = {
                "sync_start": {},
                "sync_status": {"jobId": "x"},
                "ingest_file": {"filePath": f},
                "ingest_data": {"content": "hi", "source": "n/a"},
                "ingest_url": {"url": "https://example.com/"},
                "query_documents": {"query": "hi"},
                "read_chunk_neighbors": {"filePath": f, "chunkIndex": 0},
                "read_file": {"filePath": f},
                "list_files": {},
                "delete_file": {"filePath": f},
            }
            assert set(calls) | {"status"} == set(TOOL_NAMES)
            for name, args in calls.items():
                bad(await c.call_tool(name, args), names)

    anyio.run(main)


def test_unusable_db_path_and_missing_model(tmp_path, root, model_dir):
    async def main():
        # DB_PATH under a regular file: nothing can create the index there (true even for root)
        async with Client(build_server(server_env(root, model_dir, DB_PATH=_not_a_dir(tmp_path)))) as c:
            st = ok(await c.call_tool("status", {}))
            assert st["sourceCount"] == 0
            t = bad(await c.call_tool("ingest_data", {"content": NOTES, "source": "notes/n"}), "plain-file")
            assert "DB_PATH" in t
            bad(await c.call_tool("ingest_file", {"filePath": str(write(root, "a.md", RUNBOOK))}), "DB_PATH")
        # a hub model that is not in the cache, with no hub reachable
        env = server_env(
            root,
            model_dir,
            MODEL_NAME="sentence-transformers/all-MiniLM-L6-v2",
            CACHE_DIR=str(tmp_path / "empty-cache"),
            DB_PATH=str(tmp_path / "db2"),
        )
        async with Client(build_server(env)) as c:
            st = ok(await c.call_tool("status", {}))
            assert st["modelName"] == "sentence-transformers/all-MiniLM-L6-v2" and st["configError"] is None
            bad(
                await c.call_tool("ingest_data", {"content": NOTES, "source": "notes/n"}),
                "all-MiniLM-L6-v2",
                "MODEL_NAME",
            )
            bad(await c.call_tool("ingest_file", {"filePath": str(root / "a.md")}), "all-MiniLM-L6-v2")

    anyio.run(main)


def test_unexpected_exception_is_one_line(tmp_path, model_dir, monkeypatch):
    "A bug below the adapter still comes back as a short error result."
    from minirag.api import Index

    def boom(self, *a, **k):
        raise KeyError("internal detail\nwith a second line")

    monkeypatch.setattr(Index, "list_files", boom)

    async def main():
        async with Client(build_server(server_env(tmp_path, model_dir))) as c:
            bad(await c.call_tool("list_files", {}), "unexpected KeyError")
            assert ok(await c.call_tool("status", {}))["roots"] == [str(tmp_path)]
            monkeypatch.setattr(Index, "status", boom)  # status still answers, with the problem as a value
            st = ok(await c.call_tool("status", {}))
            assert "unexpected KeyError" in st["indexError"] and "\n" not in st["indexError"] and st["version"]

    anyio.run(main)


# ---------------------------------------------------------------- real stdio subprocesses (R-P1, R-P5)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_stdio_both_eras(mode, root, model_dir, page_url):
    "`minirag-mcp` (no args) over stdio: 2026-07-28 discovery (auto) and the classic initialize handshake (legacy)."
    params = StdioServerParameters(command=SERVER_CMD, args=[], env=server_env(root, model_dir, ALLOW_PRIVATE_URLS="1"))

    async def main():
        async with Client(params, mode=mode, read_timeout_seconds=120) as c:
            if mode == "auto":
                assert c.protocol_version in MODERN_PROTOCOL_VERSIONS and c.protocol_version == "2026-07-28"
            else:
                assert c.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            assert c.instructions == INSTRUCTIONS
            await exercise(c, root, page_url, _has_sync())

    anyio.run(main)


def test_stdio_broken_config_still_serves(tmp_path, model_dir):
    params = StdioServerParameters(
        command=SERVER_CMD, args=[], env={"BASE_DIRS": "{oops", "MODEL_NAME": str(model_dir)}
    )

    async def main():
        async with Client(params, mode="auto") as c:
            assert len((await c.list_tools()).tools) == 11
            assert "BASE_DIRS" in ok(await c.call_tool("status", {}))["configError"]
            bad(await c.call_tool("query_documents", {"query": "x"}), "BASE_DIRS")

    anyio.run(main)


def _meta(modern: bool) -> dict:
    if not modern:
        return {}
    k = "io.modelcontextprotocol/"
    return {
        "_meta": {
            k + "protocolVersion": "2026-07-28",
            k + "clientInfo": {"name": "raw", "version": "0"},
            k + "clientCapabilities": {},
        }
    }


@pytest.mark.parametrize("modern", [True, False])
def test_stdout_carries_only_frames(modern, root, model_dir):
    """Raw subprocess: every stdout line is a JSON-RPC frame, even while converting, embedding and failing; logs go to
    stderr."""
    f = write(root, "ops/runbook.md", RUNBOOK)
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    m = _meta(modern)
    calls = [
        ("ingest_file", {"filePath": str(f)}),
        ("ingest_file", {"filePath": str(root / "broken.pdf")}),
        ("query_documents", {"query": "ERR_CONNECTION_REFUSED"}),
        ("read_file", {"filePath": "relative.md"}),
        ("list_files", {}),
        ("status", {}),
    ]
    if modern:
        frames = [{"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": m}]
    else:
        frames = [
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
    frames.append({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": dict(m)})
    frames += [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n, "arguments": a, **m}}
        for i, (n, a) in enumerate(calls, 2)
    ]
    env = {**os.environ, **server_env(root, model_dir)}
    p = subprocess.Popen([SERVER_CMD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    lines = []
    for fr in frames:  # one request at a time, waiting for its answer (notifications get none)
        p.stdin.write((json.dumps(fr) + "\n").encode())
        p.stdin.flush()
        if "id" in fr:
            while True:
                line = p.stdout.readline()
                assert line, p.stderr.read().decode()[-2000:]
                lines.append(line)
                msg = json.loads(line)
                if msg.get("id") == fr["id"]:
                    break
    p.stdin.close()  # EOF: the server exits on its own
    rest, err = p.stdout.read(), p.stderr.read()
    assert p.wait(timeout=30) == 0
    lines += rest.splitlines(keepends=True)
    by_id = {}
    for line in lines:
        msg = json.loads(line)  # every line parses ...
        assert msg["jsonrpc"] == "2.0"  # ... and is a JSON-RPC frame
        if "id" in msg:
            by_id[msg["id"]] = msg
    assert len(by_id[1]["result"]["tools"]) == 11
    res = {n: by_id[i]["result"] for i, (n, _) in enumerate(calls, 2)}
    assert not by_id[2]["result"].get("isError")
    assert by_id[3]["result"]["isError"] and by_id[5]["result"]["isError"]
    assert "ERR_CONNECTION_REFUSED" in by_id[4]["result"]["content"][0]["text"]
    assert b"Traceback" not in err


# ---------------------------------------------------------------- README client configs


def _readme_blocks():
    s = (REPO / "README.md").read_text()
    sec = s[s.index("<!-- mcp-clients:start -->") : s.index("<!-- mcp-clients:end -->")]
    return re.findall(r"```(\w+)\n(.*?)```", sec, flags=re.S)


def test_readme_client_configs_launch_what_the_tests_launch(root, model_dir):
    "Each README config runs `minirag-mcp` with no args and only env vars the stdio tests set."
    tested_env = set(server_env(root, model_dir))
    launched = []
    for lang, body in _readme_blocks():
        if lang == "bash":
            argv = shlex.split(body.replace("\\\n", " "))
            assert argv[:3] == ["claude", "mcp", "add"], argv
            cmd = argv[argv.index("--") + 1 :]
            env = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a in ("--env", "-e"))
            launched.append((cmd[0], cmd[1:], env))
        elif lang == "json":
            srv = json.loads(body)["mcpServers"]["minirag"]
            launched.append((srv["command"], srv["args"], srv["env"]))
        elif lang == "toml":
            srv = tomllib.loads(body)["mcp_servers"]["minirag"]
            launched.append((srv["command"], srv["args"], srv["env"]))
    assert len(launched) == 4  # Claude Code, Claude Desktop, Cursor, Codex
    for cmd, args, env in launched:
        assert Path(cmd).name == Path(SERVER_CMD).name == "minirag-mcp" and args == []
        assert "BASE_DIR" in env and set(env) <= tested_env
    assert any(Path(cmd).is_absolute() for cmd, _, _ in launched)  # Claude Desktop needs an absolute path
