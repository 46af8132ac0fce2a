"""`minirag-mcp serve --http`: a real server on a free loopback port, driven by the SDK's Streamable HTTP client and by
plain HTTP requests: both protocol eras, tokens and rights, scopes, hostile traffic."""

import json, os, socket, subprocess, sys, threading, time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from minirag.server import INSTRUCTIONS, TOOL_NAMES, build_server
from conftest import write

SERVER_CMD = str(Path(sys.executable).parent / "minirag-mcp")
ALPHA = "# Alpha pumps\n\nThe alpha pump needs oil every 200 hours; see manual AP-100.\n"
BETA = "# Beta pumps\n\nThe beta pump's service code is B-7788; never share it outside team b.\n"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(env, *args, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run([SERVER_CMD, *args], capture_output=True, text=True, env=env, timeout=120)
    assert not check or p.returncode == 0, p.stderr
    return p


class Served:
    "A `minirag-mcp serve --http` subprocess and what the tests need to reach it."

    def __init__(self, env, port, tokens):
        self.env, self.port, self.tokens = env, port, tokens
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log = open(Path(env["DB_PATH"]) / "server.log", "w+")
        self.proc = subprocess.Popen(
            [SERVER_CMD, "serve", "--http", f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL, stderr=self.log
        )
        deadline = time.time() + 90
        while True:
            assert self.proc.poll() is None, self.stderr()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, self.stderr()
            time.sleep(0.2)

    def stderr(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def auth(self, name) -> dict:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def client(self, name, mode="auto") -> Client:
        http = create_mcp_http_client(headers=self.auth(name) if name else None)
        return Client(streamable_http_client(self.url, http_client=http), mode=mode, read_timeout_seconds=120)

    def post(self, body, headers=None, **kw) -> httpx.Response:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return httpx.post(self.url, content=data, headers={**ACCEPT, **(headers or {})}, timeout=30, **kw)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory, model_dir):
    base = Path(os.path.realpath(tmp_path_factory.mktemp("http")))
    docs = base / "docs"
    write(docs, "a/alpha.md", ALPHA)
    write(docs, "b/beta.md", BETA)
    env = {
        **os.environ,
        "BASE_DIR": str(docs),
        "DB_PATH": str(base / "index"),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
        "MINIRAG_DEBUG": "1",
    }
    cli(env, "ingest", str(docs), "-q")
    cli(env, "ingest-url", "--help")  # cheap: the CLI starts
    tokens = {}
    for name, *args in [
        ("writer", "--rights", "write"),
        ("reader", "--rights", "read"),
        ("team-a", "--scope", str(docs / "a")),
    ]:
        tokens[name] = cli(env, "token", "add", name, *args).stdout.strip()
    s = Served(env, free_port(), tokens)
    s.docs = docs
    yield s
    s.stop()


def ok(r) -> dict:
    assert not r.is_error, r.content[0].text
    return r.structured_content


def refused(r, *words) -> str:
    assert r.is_error
    t = r.content[0].text
    assert "Traceback" not in t and "\n" not in t, t
    for w in words:
        assert w in t, (w, t)
    return t


def rpc(method, params=None, id=1) -> dict:
    return {"jsonrpc": "2.0", "id": id, "method": method, **({"params": params} if params is not None else {})}


def frames(r: httpx.Response) -> list[dict]:
    "The JSON-RPC messages of a response, JSON or an SSE stream."
    if r.headers.get("content-type", "").startswith("application/json"):
        return [r.json()]
    return [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:") and line[5:].strip()]


# ---------------------------------------------------------------- the same server over HTTP


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_both_eras(served, mode, model_dir):
    "The 2026-07-28 revision and the classic initialize handshake: same tools, instructions and schemas as stdio."
    local = build_server({"BASE_DIR": str(served.docs), "MODEL_NAME": str(model_dir)})

    async def main():
        want = {t.name: t for t in await local.list_tools()}
        async with served.client("writer", mode) as c:
            if mode == "legacy":
                assert c.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            else:
                assert c.protocol_version == "2026-07-28"
            assert c.instructions == INSTRUCTIONS
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert sorted(tools) == sorted(TOOL_NAMES)
            for n, t in tools.items():
                assert t.output_schema == want[n].output_schema and t.input_schema == want[n].input_schema, n
                assert t.input_schema["additionalProperties"] is False
            hits = ok(await c.call_tool("query_documents", {"query": "how often does the alpha pump need oil?"}))
            assert hits["results"][0]["source"] == str(served.docs / "a/alpha.md")
            refused(
                await c.call_tool("query_documents", {"query": "pump", "bogus": 1}), "'bogus'", "query, scope, topK"
            )

    anyio.run(main)


def test_health_needs_no_token_and_tells_a_stranger_only_ok(served):
    r = httpx.get(f"http://127.0.0.1:{served.port}/health", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ok"}, r.text  # no version, no word on tokens
    r = httpx.get(f"http://127.0.0.1:{served.port}/health", headers=served.auth("reader"), timeout=10)
    assert r.json()["status"] == "ok" and r.json()["tokens"] is True and r.json()["version"]
    assert "alpha" not in r.text and "docs" not in r.text


def test_no_token_or_a_bad_one_is_401_and_no_oauth_metadata_without_an_issuer(served):
    "Only this server's own tokens: no authorization server to name, so no metadata naming this server as one."
    init = rpc(
        "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    )
    for headers in (
        {},
        {"Authorization": "Bearer mrt_not-a-token"},
        {"Authorization": "Basic dXNlcjpwdw=="},
        {"Authorization": f"Bearer {served.tokens['writer']}x"},
    ):
        r = served.post(init, headers)
        assert r.status_code == 401, (headers, r.status_code)
        www = r.headers["www-authenticate"]
        assert www.startswith("Bearer ") and "resource_metadata" not in www, www
    root = served.url.removesuffix("/mcp")
    for path in ("oauth-protected-resource/mcp", "oauth-protected-resource", "oauth-authorization-server"):
        assert httpx.get(f"{root}/.well-known/{path}", timeout=10).status_code == 404, path


def test_read_token_calling_a_writing_tool_is_403_naming_the_right(served):
    for tool, args in [
        ("ingest_data", {"content": "x", "source": "notes/x"}),
        ("delete_file", {"source": "notes/x"}),
        ("sync_start", {}),
        ("ingest_file", {"filePath": str(served.docs / "a/alpha.md")}),
    ]:
        r = served.post(rpc("tools/call", {"name": tool, "arguments": args}, id=7), served.auth("reader"))
        assert r.status_code == 403, (tool, r.status_code, r.text)
        assert (
            'error="insufficient_scope"' in r.headers["www-authenticate"]
            and 'scope="write"' in r.headers["www-authenticate"]
        )
        body = r.json()
        assert body["id"] == 7 and body["error"]["data"] == {"tool": tool, "missingRight": "write"}
        assert "'write' right" in body["error"]["message"]

    async def main():  # the SDK client shows the message, and reading still works on the same session
        async with served.client("reader") as c:
            with pytest.raises(MCPError, match="'write' right"):
                await c.call_tool("ingest_data", {"content": "x", "source": "notes/x"})
            assert ok(await c.call_tool("status", {}))["sourceCount"] >= 2

    anyio.run(main)


def test_scoped_token_never_sees_the_other_folder(served):
    a, b = served.docs / "a", served.docs / "b"

    async def main():
        async with served.client("writer") as w:
            ok(
                await w.call_tool(
                    "ingest_data", {"content": "# Team note\n\nThe beta pump code rotates.", "source": "notes/beta"}
                )
            )
        async with served.client("team-a") as c:
            for q in ("beta pump service code B-7788", "team note", "pump"):
                r = ok(await c.call_tool("query_documents", {"query": q, "topK": 20}))
                seen = [h["source"] for h in r["results"]] + [s["source"] for s in r["sources"]]
                assert all(s.startswith(str(a) + "/") for s in seen), (q, seen)
                assert all(k.startswith(str(a) + "/") for k in r["parents"]), r["parents"].keys()
                assert "B-7788" not in json.dumps({k: v for k, v in r.items() if k != "query"})
            files = ok(await c.call_tool("list_files", {}))
            assert [f["filePath"] for f in files["files"]] == [str(a / "alpha.md")]
            assert files["sources"] == [] and files["indexedButMissing"] == []
            st = ok(await c.call_tool("status", {}))
            assert (st["sourceCount"], st["roots"]) == (1, [str(a)]), st
            assert (
                st["chunkCount"] == ok(await c.call_tool("read_file", {"filePath": str(a / "alpha.md")}))["chunkCount"]
            )
            refused(await c.call_tool("read_file", {"filePath": str(b / "beta.md")}), "outside")
            refused(await c.call_tool("read_file", {"filePath": str(a / ".." / "b" / "beta.md")}), "outside")
            refused(await c.call_tool("read_file", {"source": "notes/beta"}), "outside")
            refused(
                await c.call_tool("read_chunk_neighbors", {"filePath": str(b / "beta.md"), "chunkIndex": 0}), "outside"
            )
            for wider in (str(served.docs), str(b), [str(a), str(b)], "notes"):
                refused(await c.call_tool("query_documents", {"query": "pump", "scope": wider}), "outside")
                refused(await c.call_tool("list_files", {"scope": wider}), "outside")
            inner = ok(await c.call_tool("query_documents", {"query": "pump", "scope": str(a / "alpha.md")}))
            assert {h["source"] for h in inner["results"]} == {str(a / "alpha.md")}
        async with served.client("reader") as c:  # a read token without scope sees everything
            assert ok(await c.call_tool("status", {}))["sourceCount"] == 3

    anyio.run(main)


def test_revoked_token_stops_at_once_and_tokens_are_stored_as_hashes(served):
    t = cli(served.env, "token", "add", "temp", "--json").stdout
    token = json.loads(t)["token"]
    stored = (Path(served.env["DB_PATH"]) / "tokens.json").read_text()
    assert token not in stored and all(v not in stored for v in served.tokens.values())
    assert "temp" in cli(served.env, "token", "list").stdout and token not in cli(served.env, "token", "list").stdout
    init = rpc(
        "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    )
    assert served.post(init, {"Authorization": f"Bearer {token}"}).status_code == 200
    cli(served.env, "token", "revoke", "temp")
    assert served.post(init, {"Authorization": f"Bearer {token}"}).status_code == 401
    p = cli(served.env, "token", "revoke", "temp", check=False)
    assert p.returncode == 1 and "no token named 'temp'" in p.stderr


def test_other_address_without_tokens_is_refused_at_start(tmp_path, model_dir):
    env = {
        **os.environ,
        "BASE_DIR": str(tmp_path),
        "MODEL_NAME": str(model_dir),
        "MINIRAG_TOKENS_FILE": str(tmp_path / "none.json"),
    }
    p = subprocess.run(
        [SERVER_CMD, "serve", "--http", f"0.0.0.0:{free_port()}"], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "without authentication" in p.stderr and "token add" in p.stderr and "127.0.0.1" in p.stderr
    p = subprocess.run(
        [SERVER_CMD, "serve", "--http", "localhost:http"], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 1 and "[HOST:]PORT" in p.stderr and "Traceback" not in p.stderr, p.stderr


# ---------------------------------------------------------------- hostile traffic


def _session(served, name="writer") -> dict:
    "A classic-handshake session: the headers its later requests carry."
    init = rpc(
        "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    )
    r = served.post(init, served.auth(name))
    assert r.status_code == 200, r.text
    h = {**served.auth(name), "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    served.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    return h


def test_hostile_requests_get_the_right_answers(served):
    h = _session(served)
    call = rpc("tools/call", {"name": "status", "arguments": {}})
    assert served.post(call, {**h, "Host": "evil.example:80"}).status_code == 421  # DNS rebinding
    assert served.post(call, {**h, "Origin": "http://evil.example"}).status_code == 403
    assert served.post(call, {**h, "Origin": f"http://localhost:{served.port}"}).status_code == 200
    big = json.dumps(
        rpc("tools/call", {"name": "ingest_data", "arguments": {"content": "x" * (5 << 20), "source": "n/big"}})
    )
    assert served.post(big, h).status_code == 413
    assert served.post(big, served.auth("reader")).status_code == 413  # the rights check reads no further either
    r = served.post(b"{not json", h)
    assert r.status_code == 400 and frames(r)[0]["error"]["code"] == -32700
    assert served.post(b'{"jsonrpc": "2.0", "id": 1}', h).status_code == 400
    assert served.post(call, {**h, "Content-Type": "text/plain"}).status_code in (400, 415)
    r = served.post(rpc("no/such/method", {}), h)
    assert frames(r)[0]["error"]["code"] == -32601, r.text
    r = served.post(rpc("tools/call", {"name": "no_such_tool", "arguments": {}}), h)
    res = frames(r)[0]
    assert res.get("result", {}).get("isError") or res.get("error"), res
    r = served.post(rpc("tools/call", {"name": "list_files", "arguments": {"order": "name"}}), h)
    res = frames(r)[0]["result"]
    assert res["isError"] and "'order'" in res["content"][0]["text"]  # an argument no tool takes is named
    r = served.post(call, {**h, "mcp-session-id": "not-a-session"})
    assert r.status_code in (400, 404)


def test_slow_clients_and_1000_bad_requests_while_good_clients_are_answered(served):
    slow = []
    for _ in range(20):  # connections that send half a request and then nothing
        s = socket.create_connection(("127.0.0.1", served.port))
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{")
        slow.append(s)
    codes, stop = [], threading.Event()

    def hammer():
        bad = [
            (b"{oops", {}),
            (json.dumps(rpc("x")).encode(), {"Host": "evil.example"}),
            (b"[]", {"Authorization": "Bearer nope"}),
            (b"x" * 100, {"Content-Type": "text/plain"}),
        ]
        with httpx.Client(timeout=30) as c:
            for i in range(1000):
                body, extra = bad[i % len(bad)]
                codes.append(
                    c.post(served.url, content=body, headers={**ACCEPT, **served.auth("writer"), **extra}).status_code
                )
        stop.set()

    t = threading.Thread(target=hammer)
    t.start()
    answered = 0

    async def good():
        nonlocal answered
        async with served.client("reader") as c:
            while not stop.is_set() or answered < 3:
                r = ok(await c.call_tool("query_documents", {"query": "alpha pump oil", "topK": 3}))
                assert r["results"], r
                answered += 1

    anyio.run(good)
    t.join(timeout=300)
    assert len(codes) == 1000 and set(codes) <= {400, 401, 406, 415, 421}, sorted(set(codes))
    assert answered >= 3
    for s in slow:
        s.close()

    async def after():
        async with served.client("team-a") as c:
            assert ok(await c.call_tool("status", {}))["sourceCount"] == 1

    anyio.run(after)
    assert served.proc.poll() is None


def test_tokens_never_reach_the_log(served):
    "Runs last: every token used above (good, bad, revoked) is absent from the server's stderr, with MINIRAG_DEBUG=1."
    log = served.stderr()
    assert "serving MCP on" in log
    for t in [*served.tokens.values(), "mrt_not-a-token"]:
        assert t not in log
    assert "Traceback" not in log, log[-2000:]


# ---------------------------------------------------------------- an OAuth issuer's JWT access tokens


def hs256(claims: dict, secret: bytes) -> str:
    "A JWT signed with HMAC by hand (PyJWT refuses to sign with a key that looks public, as an attacker would)."
    import base64, hashlib, hmac

    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    head = (
        b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode()) + "." + b64(json.dumps(claims).encode())
    )
    return head + "." + b64(hmac.new(secret, head.encode(), hashlib.sha256).digest())


def issuer_keys(folder: Path):
    "An issuer's RSA key made here, and its public half as a JWKS file in `folder/jwks.json`: (key, jwk)."
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())) | {"kid": "k1", "use": "sig"}
    (folder / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    return key, jwk


def test_oauth_issuer_jwts_are_checked_for_signature_expiry_issuer_and_audience(tmp_path, model_dir):
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key, jwk = issuer_keys(tmp_path)
    docs = Path(os.path.realpath(tmp_path)) / "docs"
    write(docs, "a/alpha.md", ALPHA)
    write(docs, "b/beta.md", BETA)
    issuer, port = "https://id.example.org", free_port()
    env = {
        **os.environ,
        "BASE_DIR": str(docs),
        "DB_PATH": str(tmp_path / "index"),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
        "MINIRAG_OAUTH_ISSUER": issuer,
        "MINIRAG_OAUTH_JWKS": str(tmp_path / "jwks.json"),
    }
    cli(env, "ingest", str(docs), "-q")
    url = f"http://127.0.0.1:{port}/mcp"
    base = dict(iss=issuer, aud=url, exp=int(time.time()) + 600, sub="carol")

    def sign(claims, k=key, alg="RS256"):
        return jwt.encode(claims, k, algorithm=alg, headers={"kid": "k1"})

    good = sign(base | {"scope": "openid minirag:read", "minirag_scopes": [str(docs / "a")]})
    s = Served(env, port, {"good": good})
    try:
        meta = httpx.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=10).json()
        assert meta["resource"] == url and meta["authorization_servers"] == [issuer]
        r = httpx.post(url, json={}, headers={"Accept": "application/json, text/event-stream"}, timeout=10)
        assert r.status_code == 401 and 'resource_metadata="http://127.0.0.1:' in r.headers["www-authenticate"]

        async def main():
            async with s.client("good") as c:
                r = ok(await c.call_tool("query_documents", {"query": "pump service code", "topK": 10}))
                assert {h["source"] for h in r["results"]} == {str(docs / "a/alpha.md")}
                with pytest.raises(MCPError, match="'write' right"):
                    await c.call_tool("delete_file", {"filePath": str(docs / "a/alpha.md")})

        anyio.run(main)
        init = rpc(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        refused_tokens = [
            sign(base | {"scope": "minirag:read", "exp": int(time.time()) - 300}),  # expired
            sign(base | {"scope": "minirag:read", "aud": "http://elsewhere/mcp"}),  # for another server
            sign(base | {"scope": "minirag:read", "iss": "https://evil.example"}),  # another issuer
            sign(base | {"scope": "minirag:read"}, k=other),  # not the issuer's key
            hs256(base | {"scope": "minirag:read"}, json.dumps(jwk).encode()),  # the public key as an HMAC secret
            sign({k: v for k, v in base.items() if k != "exp"} | {"scope": "minirag:read"}),  # no expiry
        ]
        for t in refused_tokens:
            assert s.post(init, {"Authorization": f"Bearer {t}"}).status_code == 401
        assert s.post(init, {"Authorization": f"Bearer {good}"}).status_code == 200
        assert all(t not in s.stderr() for t in [good, *refused_tokens])
    finally:
        s.stop()
