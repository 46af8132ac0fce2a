"""Tokens and scopes that hold, against a real `serve --http` on a free loopback port: `~` never reaches outside a
scope, a scopes claim of the wrong shape never widens one, links are judged at both ends, a server is never left open
by accident, and sessions and connections are bounded."""

import io, json, os, socket, subprocess, time
from contextlib import redirect_stderr
from pathlib import Path

import anyio
import httpx
import pytest

from conftest import write
from test_http import ALPHA, SERVER_CMD, Served, _session, cli, free_port, issuer_keys, ok, refused, rpc

BETA = "# Beta vault\n\nThe beta vault combination is ZEBRA-4411; only team b may know it.\n"
INIT = rpc(
    "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
)


def _env(base: Path, model_dir, **extra) -> dict:
    return {
        **os.environ,
        "HOME": str(base),  # the server's home: `~/docs/...` would name the documents
        "BASE_DIR": str(base / "docs"),
        "DB_PATH": str(base / "index"),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
        **extra,
    }


@pytest.fixture(scope="module")
def linked(tmp_path_factory, model_dir):
    "docs/a and docs/b, with a link in a pointing at b's file and a link in b pointing at a's; team-a tokens."
    base = Path(os.path.realpath(tmp_path_factory.mktemp("scopes")))
    docs = base / "docs"
    write(docs, "a/alpha.md", ALPHA)
    write(docs, "b/y.md", BETA)
    os.symlink(docs / "b/y.md", docs / "a/link.md")
    os.symlink(docs / "a/alpha.md", docs / "b/to-a.md")
    env = _env(base, model_dir)
    cli(env, "ingest", str(docs), "-q")
    tokens = {"writer": cli(env, "token", "add", "writer", "--rights", "write").stdout.strip()}
    for name, rights in [("team-a", "read"), ("team-a-w", "write")]:
        tokens[name] = cli(env, "token", "add", name, "--rights", rights, "--scope", str(docs / "a")).stdout.strip()
    s = Served(env, free_port(), tokens)
    s.docs = docs
    yield s
    s.stop()


def _call(s, name, tool, args):
    async def main():
        async with s.client(name) as c:
            return await c.call_tool(tool, args)

    return anyio.run(main)


def test_tilde_never_reaches_outside_the_scope(linked):
    b_y = str(linked.docs / "b/y.md")
    for p in ("~nobody/.." + b_y, "~root/.." + b_y, "~/docs/b/y.md", "~"):
        t = refused(_call(linked, "team-a", "read_file", {"filePath": p}), "'~'")
        assert "ZEBRA" not in t
        refused(_call(linked, "team-a", "read_chunk_neighbors", {"filePath": p, "chunkIndex": 0}), "'~'")
        refused(_call(linked, "team-a-w", "delete_file", {"filePath": p}), "'~'")
        refused(_call(linked, "team-a-w", "ingest_file", {"filePath": p}), "'~'")
    refused(_call(linked, "team-a-w", "sync_start", {"path": "~nobody/.." + str(linked.docs / "b")}), "'~'")
    refused(_call(linked, "writer", "read_file", {"filePath": "~nobody/.." + b_y}), "'~'")  # unscoped: refused too
    assert ok(_call(linked, "writer", "read_file", {"filePath": b_y}))["chunkCount"] >= 1  # still indexed


def test_a_tilde_scope_on_a_query_or_a_listing_never_widens_a_grant(linked):
    b = str(linked.docs / "b")
    for scope in ("~nobody/.." + b, "~root/.." + b, "~/docs/b", ["~/docs/b", str(linked.docs / "a")]):
        for tool, args in (("query_documents", {"query": "beta vault combination"}), ("list_files", {})):
            r = _call(linked, "team-a", tool, {**args, "scope": scope})
            assert "ZEBRA" not in r.content[0].text and "y.md" not in r.content[0].text, r.content[0].text
            if not r.is_error:
                assert b not in json.dumps(r.structured_content), r.structured_content


def test_an_error_shown_to_a_scoped_token_does_not_name_the_document_root(linked):
    for args in ({"filePath": "b/y.md"}, {"filePath": "~/x.md"}, {"filePath": str(linked.docs.parent / "x.md")}):
        t = refused(_call(linked, "team-a", "read_file", args))
        assert str(linked.docs) + " " not in t + " " and f"{linked.docs}/b" not in t, t
        assert f"({linked.docs})" not in t and f"{linked.docs}," not in t, t


def test_links_are_judged_at_both_ends(linked):
    a, b = linked.docs / "a", linked.docs / "b"
    r = ok(_call(linked, "team-a", "query_documents", {"query": "beta vault combination", "topK": 20}))
    assert "ZEBRA" not in json.dumps({k: v for k, v in r.items() if k != "query"}), r
    assert str(a / "link.md") not in {h["source"] for h in r["results"]}
    refused(_call(linked, "team-a", "read_file", {"filePath": str(a / "link.md")}), "outside")
    refused(_call(linked, "team-a", "read_file", {"filePath": str(b / "to-a.md")}), "outside")
    refused(_call(linked, "team-a-w", "delete_file", {"filePath": str(b / "to-a.md")}), "outside")
    assert ok(_call(linked, "writer", "read_file", {"filePath": str(b / "to-a.md")}))["chunkCount"] >= 1
    assert ok(_call(linked, "team-a", "read_file", {"filePath": str(a / "alpha.md")}))["chunkCount"] >= 1


def test_an_object_id_gets_a_json_rpc_error(linked):
    h = _session(linked)
    for body in (
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        [{"jsonrpc": "2.0", "id": [1], "method": "ping"}],
    ):
        r = linked.post(body, h)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32600 and r.json()["id"] is None, r.text
    assert linked.post(rpc("ping"), h).status_code == 200  # the session still answers


def test_health_tells_a_stranger_only_ok(linked):
    r = httpx.get(f"http://127.0.0.1:{linked.port}/health", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ok"}, r.text


# ---------------------------------------------------------------- scopes of the wrong shape


@pytest.mark.parametrize("scope, words", [("", "everything"), ("/", "everything"), ("~/docs", "'~'")])
def test_token_add_refuses_a_scope_that_names_no_place(tmp_path, model_dir, scope, words):
    env = _env(tmp_path, model_dir)
    p = cli(env, "token", "add", "x", "--scope", scope, check=False)
    assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "give absolute folders" in p.stderr
    assert "x" not in cli(env, "token", "list").stdout.split()


def test_a_jwt_scopes_claim_of_the_wrong_shape_is_a_401_with_the_reason(tmp_path, model_dir):
    import jwt

    key, _ = issuer_keys(tmp_path)
    docs = Path(os.path.realpath(tmp_path)) / "docs"
    write(docs, "a/alpha.md", ALPHA)
    issuer, port = "https://id.example.org", free_port()
    env = _env(tmp_path, model_dir, MINIRAG_OAUTH_ISSUER=issuer, MINIRAG_OAUTH_JWKS=str(tmp_path / "jwks.json"))
    cli(env, "ingest", str(docs), "-q")
    base = dict(iss=issuer, aud=f"http://127.0.0.1:{port}/mcp", exp=int(time.time()) + 600, sub="carol")

    def sign(scopes):
        return jwt.encode(base | {"scope": "minirag:read", "minirag_scopes": scopes}, key, "RS256", {"kid": "k1"})

    s = Served(env, port, {"one": sign(str(docs / "a"))})
    try:
        for bad in (str(docs / "a"), ["/"], [""], ["~/docs"], [], "/"):
            r = s.post(INIT, {"Authorization": f"Bearer {sign(bad)}"})
            assert r.status_code == 401, (bad, r.status_code, r.text)
            assert "minirag_scopes" in r.json()["error_description"], r.text
            assert "minirag_scopes" in r.headers["www-authenticate"]
        assert s.post(INIT, {"Authorization": f"Bearer {sign([str(docs / 'a')])}"}).status_code == 200
    finally:
        s.stop()


# ---------------------------------------------------------------- never open by accident


def test_the_first_token_locks_a_running_server_at_once(tmp_path, model_dir):
    env = _env(tmp_path, model_dir)
    write(tmp_path / "docs", "a/alpha.md", ALPHA)
    (tmp_path / "index").mkdir()
    s = Served(env, free_port(), {})
    try:
        assert s.post(INIT).status_code == 200  # loopback, no tokens: open to this machine
        token = cli(env, "token", "add", "first").stdout.strip()
        r = s.post(INIT)
        assert r.status_code == 401 and "invalid_token" in r.headers["www-authenticate"], r.text
        delete = rpc(
            "tools/call", {"name": "delete_file", "arguments": {"filePath": str(tmp_path / "docs/a/alpha.md")}}
        )
        assert s.post(delete).status_code == 401
        assert s.post(INIT, {"Authorization": f"Bearer {token}"}).status_code == 200
    finally:
        s.stop()


def test_a_public_url_without_tokens_is_refused_at_start(tmp_path, model_dir):
    env = _env(tmp_path, model_dir, MINIRAG_PUBLIC_URL="https://rag.example.org/mcp")
    (tmp_path / "docs").mkdir()
    p = subprocess.run(
        [SERVER_CMD, "serve", "--http", f"127.0.0.1:{free_port()}"], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "without authentication" in p.stderr and "MINIRAG_PUBLIC_URL" in p.stderr and "token add" in p.stderr


def test_a_server_bound_to_every_address_says_which_host_it_answers(tmp_path):
    from minirag.access import TokenStore
    from minirag.http import StoreVerifier, Verifiers, _announce

    err = io.StringIO()
    with redirect_stderr(err):
        _announce(
            "0.0.0.0",
            8123,
            "https://rag.example.org/mcp",
            Verifiers(StoreVerifier(TokenStore(tmp_path / "t.json"))),
            tmp_path,
        )
    assert "Host: rag.example.org" in err.getvalue(), err.getvalue()
    err = io.StringIO()
    with redirect_stderr(err):
        _announce(
            "0.0.0.0",
            8123,
            "http://0.0.0.0:8123/mcp",
            Verifiers(StoreVerifier(TokenStore(tmp_path / "t.json"))),
            tmp_path,
        )
    assert "Host: 0.0.0.0:8123" in err.getvalue() and "MINIRAG_PUBLIC_URL" in err.getvalue(), err.getvalue()


# ---------------------------------------------------------------- bounds


@pytest.fixture(scope="module")
def bounded(tmp_path_factory, model_dir):
    base = Path(os.path.realpath(tmp_path_factory.mktemp("bounds")))
    write(base / "docs", "a/alpha.md", ALPHA)
    limits = dict(
        MINIRAG_HTTP_SESSIONS="3",
        MINIRAG_HTTP_SESSION_IDLE="8",  # long enough that a busy machine opens three sessions before one ends
        MINIRAG_HTTP_CONNECTIONS="8",
        MINIRAG_HTTP_READ_TIMEOUT="4",  # the capped connections must outlive a busy server's pauses
    )
    env = _env(base, model_dir, **limits)
    tokens = {n: cli(env, "token", "add", n).stdout.strip() for n in ("one", "two")}
    s = Served(env, free_port(), tokens)
    yield s
    s.stop()


def test_a_token_holds_a_bounded_number_of_sessions_and_idle_ones_expire(bounded):
    ids = []
    for _ in range(3):
        r = bounded.post(INIT, bounded.auth("one"))
        assert r.status_code == 200, r.text
        ids.append(r.headers["mcp-session-id"])
    r = bounded.post(INIT, bounded.auth("one"))
    assert r.status_code == 429 and "MINIRAG_HTTP_SESSIONS" in r.json()["error"]["message"], r.text
    assert bounded.post(INIT, bounded.auth("two")).status_code == 200  # another token is not locked out
    time.sleep(11)  # idle sessions end after MINIRAG_HTTP_SESSION_IDLE
    ping = {**bounded.auth("one"), "mcp-session-id": ids[0], "mcp-protocol-version": "2025-06-18"}
    assert bounded.post(rpc("ping"), ping).status_code == 404
    assert bounded.post(INIT, bounded.auth("one")).status_code == 200


def _raw(port: int, data: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(data)
    return s


def test_headers_and_bodies_have_deadlines(bounded):
    slow = _raw(bounded.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finished
    t0 = time.time()
    assert slow.recv(1024) == b"" and 3.5 < time.time() - t0 < 15  # closed after MINIRAG_HTTP_READ_TIMEOUT
    slow.close()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{bounded.port}\r\nAuthorization: Bearer {bounded.tokens['two']}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n"
    )
    slow = _raw(bounded.port, head.encode() + b'{"jsonrpc"')  # a body that stops
    assert slow.recv(1024).startswith(b"HTTP/1.1 408")
    slow.close()


def test_connections_are_capped(bounded):
    idle = [_raw(bounded.port, b"") for _ in range(8)]
    try:
        time.sleep(0.3)
        r = httpx.get(f"http://127.0.0.1:{bounded.port}/health", timeout=5)
        assert r.status_code == 503, r.status_code
    finally:
        for s in idle:
            s.close()
    time.sleep(0.3)
    assert httpx.get(f"http://127.0.0.1:{bounded.port}/health", timeout=5).status_code == 200
