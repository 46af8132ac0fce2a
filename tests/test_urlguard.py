"""URL guard: scheme/host rules, pinned fetch, redirects, limits, markitdown conversion.

Network rule for this file: nothing may leave 127.0.0.0/8 or ::1. An autouse fixture
replaces socket connect and getaddrinfo so that a public address can only ever be a
resolver *answer*; connecting to one is refused (or, where a test says so, translated
to the loopback test server by a tiny test-only NAT table)."""

import http.server, ipaddress, shutil, socket, ssl, subprocess, threading, time
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from minirag.config import MiniragError
from minirag.urlguard import (
    check_url,
    fetch_url,
    url_to_markdown,
    Fetched,
    UrlRefused,
    FetchError,
    _inet_aton,
    _refusal_reason,
)

PUBLIC = "93.184.216.34"  # only ever a resolver answer; never contacted
PUBLIC6 = "2606:2800:220:1:248:1893:25c8:1946"


# --- network guard ---------------------------------------------------------------------------
class Net:
    "Records every connect attempt; allows loopback only; `nat` maps (ip, port) -> loopback (ip, port)."

    def __init__(self):
        self.connects, self.nat, self.lookups = [], {}, []


def _is_loopback(host):
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def net(monkeypatch):
    n = Net()
    real_connect, real_gai = socket.socket.connect, socket.getaddrinfo

    def connect(self, address):
        host, port = address[0], address[1]
        n.connects.append((host, port))
        host, port = n.nat.get((host, port), (host, port))
        if not _is_loopback(host):
            raise ConnectionRefusedError(111, f"test guard: no traffic to {host}")
        return real_connect(self, (host, port) + tuple(address[2:]))

    def getaddrinfo(host, *a, **kw):
        h = host.decode() if isinstance(host, bytes) else host
        try:
            ipaddress.ip_address(h)
        except (ValueError, TypeError):  # a name, not an address literal
            n.lookups.append(h)
            if h != "localhost":
                raise socket.gaierror(socket.EAI_NONAME, "test guard: no DNS lookups")
        return real_gai(host, *a, **kw)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return n


# --- a loopback test server ------------------------------------------------------------------
HTML = b"<html><head><title>Test page</title></head><body><h1>Heading</h1><p>Some <b>bold</b> text.</p></body></html>"
RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>Feed title</title>
<link>http://x/</link><description>d</description>
<item><title>First item</title><link>http://x/1</link><description>Item body</description></item>
</channel></rss>"""
WIKI = (
    b"<html><head><title>Turtle - Wikipedia</title></head><body><div id='chrome'>NAVIGATION JUNK</div>"
    b"<h1><span class='mw-page-title-main'>Turtle</span></h1>"
    b"<div id='mw-content-text'><p>Turtles are reptiles.</p></div></body></html>"
)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *a):
        pass

    def _send(self, status, body=b"", ctype="text/plain; charset=utf-8", headers=(), length=True):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Host"), getattr(self.connection, "server_hostname", None)))
        p = urlsplit(self.path).path
        base = f"http://{self.headers['Host']}"
        if p == "/caf%C3%A9":
            return self._send(200, "café".encode())
        if p == "/short":  # headers promise 1000 bytes, then the connection closes after 10
            self._send(200, headers=[("Content-Length", "1000")], length=False)
            self.wfile.write(b"x" * 10)
            return
        if p == "/plain":
            return self._send(200, b"hello plain\n")
        if p == "/html":
            return self._send(200, HTML, "text/html; charset=utf-8")
        if p == "/json":
            return self._send(200, b'{"a": [1, 2]}', "application/json")
        if p == "/rss":
            return self._send(200, RSS, "application/rss+xml")
        if p == "/latin1":
            return self._send(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        if p == "/download":
            return self._send(
                200,
                b"a,b\n1,2\n",
                "application/octet-stream",
                [("Content-Disposition", 'attachment; filename="t.csv"')],
            )
        if p == "/wiki/Turtle":
            return self._send(200, WIKI, "text/html; charset=utf-8")
        if p.startswith("/chain/"):
            n = int(p.rsplit("/", 1)[1])
            if n == 0:
                return self._send(200, b"end of chain")
            return self._send(302, headers=[("Location", f"{base}/chain/{n - 1}")])
        if p == "/rel/a/b":
            return self._send(301, headers=[("Location", "../target?x=1")])
        if p == "/rel/target":
            return self._send(200, b"relative ok")
        if p == "/go":
            return self._send(307, headers=[("Location", self.path.split("to=", 1)[1])])
        if p == "/noloc":
            return self._send(302)
        if p == "/secret":
            return self._send(200, b"SECRET")
        if p == "/big":
            return self._send(200, b"x" * 5000)
        if p == "/stream":  # no Content-Length: the client must count and stop
            self._send(200, length=False)
            try:
                for _ in range(2000):
                    self.wfile.write(b"y" * 8192)
            except OSError:
                srv.stream_aborted = True
            return
        if p == "/slow":
            time.sleep(2)
            return self._send(200, b"late")
        if p == "/drip":
            self._send(200, headers=[("Content-Length", "100")], length=False)
            self.wfile.write(b"a")
            self.wfile.flush()
            time.sleep(2)
            return
        if p.startswith("/status/"):
            return self._send(int(p.rsplit("/", 1)[1]), b"nope")
        self._send(404, b"not found")


def _serve(ssl_ctx=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.requests, srv.stream_aborted = [], False
    if ssl_ctx:
        srv.socket = ssl_ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv


@pytest.fixture
def server():
    srv = _serve()
    srv.port = srv.server_address[1]
    srv.base = f"http://127.0.0.1:{srv.port}"
    yield srv
    srv.shutdown()
    srv.server_close()


def paths(srv):
    return [r[0] for r in srv.requests]


def names(table):
    "A resolver from a dict; counts calls per host."
    calls = {}

    def resolve(host):
        calls[host] = calls.get(host, 0) + 1
        ans = table[host]
        return ans(calls[host]) if callable(ans) else ans

    resolve.calls = calls
    return resolve


# --- check_url: schemes ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "url,msg",
    [
        ("file:///etc/passwd", "file: is not allowed"),
        ("FILE:///etc/passwd", "file: is not allowed"),
        ("data:text/html,<h1>x</h1>", "data: is not allowed"),
        ("ftp://ftp.example.com/x", "ftp: is not allowed"),
        ("javascript:alert(1)", "javascript: is not allowed"),
        ("gopher://example.com/", "gopher: is not allowed"),
        ("mailto:a@example.com", "mailto: is not allowed"),
        ("ws://example.com/", "ws: is not allowed"),
        ("example.com/page", "has no scheme"),
        ("localhost:8080/x", "has no scheme"),
        ("//example.com/x", "has no scheme"),
        ("", "is empty"),
        ("   ", "is empty"),
        ("http:///nohost", "has no host"),
        ("http://", "has no host"),
        ("http://[::1", "malformed"),
        ("http://example.com:99999/", "malformed"),
        ("http://exa mple.com/", "spaces or control characters"),
        ("http://example.com/\nHost: evil", "spaces or control characters"),
        ("http://user:pw@example.com/", "user name or password"),
        ("http://example.com@127.0.0.1/", "user name or password"),
    ],
)
@pytest.mark.parametrize("allow_private", [False, True])
def test_scheme_and_form_refused_even_with_allow_private(url, msg, allow_private, net):
    with pytest.raises(UrlRefused, match=msg):
        check_url(url, allow_private=allow_private, resolver=lambda h: [PUBLIC])
    assert net.connects == []


def test_non_string_refused():
    with pytest.raises(UrlRefused, match="must be a string"):
        check_url(b"http://example.com/")


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/",
        "https://example.com/a?b=c#frag",
        "HTTPS://EXAMPLE.COM",
        "http://example.com:8080/x",
        f"http://{PUBLIC}/",
        f"http://[{PUBLIC6}]:81/",
        "http://bücher.example/",
        "  https://example.com/  ",
    ],
)
def test_public_urls_pass(url):
    assert check_url(url, resolver=lambda h: [PUBLIC]) is None


# --- check_url: hosts ------------------------------------------------------------------------
HOSTS = [  # (host as written in the URL, words the refusal must contain)
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("localhost", "resolves to 127.0.0.1) is loopback"),
    ("2130706433", "(= 127.0.0.1) is loopback"),
    ("0177.0.0.1", "(= 127.0.0.1) is loopback"),
    ("0x7f.1", "(= 127.0.0.1) is loopback"),
    ("0x7f000001", "(= 127.0.0.1) is loopback"),
    ("127.1", "(= 127.0.0.1) is loopback"),
    ("0177.1", "(= 127.0.0.1) is loopback"),
    ("0x7F.0.0.1", "(= 127.0.0.1) is loopback"),
    ("017700000001", "(= 127.0.0.1) is loopback"),
    ("10.0.0.1", "private"),
    ("012.1", "(= 10.0.0.1) is private"),
    ("167772161", "(= 10.0.0.1) is private"),
    ("172.16.5.4", "private"),
    ("192.168.1.1", "private"),
    ("0xc0.0xa8.1.1", "(= 192.168.1.1) is private"),
    ("169.254.169.254", "cloud metadata"),
    ("2852039166", "(= 169.254.169.254) is link-local"),
    ("169.254.1.1", "link-local"),
    ("100.64.0.1", "shared address space"),
    ("100.127.255.254", "shared address space"),
    ("0.0.0.0", "unspecified"),
    ("0", "(= 0.0.0.0) is unspecified"),
    ("224.0.0.251", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "private"),
    ("255.255.255.255", "private"),
    ("[::1]", "loopback"),
    ("[::]", "unspecified"),
    ("[0:0:0:0:0:0:0:1]", "loopback"),
    ("[::ffff:127.0.0.1]", "IPv4-mapped 127.0.0.1, loopback"),
    ("[::ffff:7f00:1]", "IPv4-mapped 127.0.0.1, loopback"),
    ("[::ffff:10.0.0.1]", "IPv4-mapped 10.0.0.1, private"),
    ("[::ffff:169.254.169.254]", "IPv4-mapped 169.254.169.254, link-local"),
    ("[fd00::1]", "unique local"),
    ("[fc00::5]", "unique local"),
    ("[fe80::1]", "link-local"),
    ("[fe80::1%25eth0]", "link-local"),
    ("[fec0::1]", "site-local"),
    ("[ff02::1]", "multicast"),
    ("[64:ff9b::a00:1]", "NAT64 10.0.0.1, private"),
    ("[2002:7f00:1::]", "6to4 127.0.0.1, loopback"),
    ("[::127.0.0.1]", "reserved"),
    ("[2001:db8::1]", "private"),
]


@pytest.mark.parametrize("host,why", HOSTS)
def test_non_public_hosts_refused_with_host_and_reason(host, why, net):
    url = f"http://{host}:8080/path"
    with pytest.raises(UrlRefused) as e:
        check_url(url)
    msg = str(e.value)
    assert why in msg
    assert f"host '{host.strip('[]').lower()}'" in msg
    assert "ALLOW_PRIVATE_URLS" in msg
    assert net.connects == []
    assert check_url(url, allow_private=True) is None  # the host rule is the only thing lifted


@pytest.mark.parametrize(
    "answers,bad",
    [
        ([PUBLIC, "10.0.0.7"], "10.0.0.7"),
        (["127.0.0.1"], "127.0.0.1"),
        ([PUBLIC6, "::1"], "::1"),
        (["::ffff:192.168.0.1", PUBLIC], "::ffff:c0a8:1"),
        (["169.254.169.254"], "169.254.169.254"),
    ],
)
def test_name_refused_if_any_answer_is_not_public(answers, bad):
    with pytest.raises(UrlRefused, match=f"host 'docs.example' \\(resolves to {bad}\\)"):
        check_url("https://docs.example/", resolver=lambda h: answers)
    assert check_url("https://docs.example/", allow_private=True, resolver=lambda h: answers) is None


def test_literal_ip_is_not_sent_to_the_resolver():
    def resolver(h):
        raise AssertionError(f"resolver asked about {h}")

    with pytest.raises(UrlRefused):
        check_url("http://0x7f.1/", resolver=resolver)
    assert check_url(f"http://{PUBLIC}/", resolver=resolver) is None


@pytest.mark.parametrize(
    "resolver,why",
    [
        (lambda h: (_ for _ in ()).throw(socket.gaierror(-2, "Name or service not known")), "Name or service"),
        (lambda h: [], "no addresses"),
        (lambda h: ["not-an-ip"], "bad answer"),
    ],
)
def test_unresolvable_host_is_a_fetch_error_not_a_refusal(resolver, why):
    with pytest.raises(FetchError, match=f"could not resolve host 'nowhere.example'.*{why}") as e:
        check_url("http://nowhere.example/", resolver=resolver)
    assert not isinstance(e.value, UrlRefused)


def test_system_resolver_failure_is_a_fetch_error(net):
    with pytest.raises(FetchError, match="could not resolve host 'nowhere.invalid'"):
        check_url("http://nowhere.invalid/")  # the guard's getaddrinfo refuses: no DNS packet
    assert net.lookups == ["nowhere.invalid"]


# --- property tests ---------------------------------------------------------------------------
answers = st.sampled_from([[PUBLIC], ["127.0.0.1"], [PUBLIC6, "10.1.1.1"], [], ["junk"], None])


def _resolver(ans):
    def r(h):
        if ans is None:
            raise socket.gaierror(-2, "no")
        return ans

    return r


url_like = st.one_of(
    st.text(max_size=80),
    st.from_regex(r"\A[a-zA-Z]{0,8}:{0,1}/{0,3}[\w.:@%\[\]\-]{0,30}(/[^\s]{0,20})?\Z"),
    st.builds(
        lambda s, h, p: f"{s}://{h}{p}",
        st.sampled_from(["http", "https", "HTTP", "file", "ftp", ""]),
        st.text("0123456789abcdefxX.:[]%@-", max_size=25),
        st.sampled_from(["", "/", ":80/", ":0", ":x/"]),
    ),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url=url_like, ans=answers, allow_private=st.booleans())
def test_check_url_only_returns_or_raises_minirag_error(url, ans, allow_private):
    try:
        check_url(url, allow_private=allow_private, resolver=_resolver(ans))
    except MiniragError as e:
        assert str(e)
    # anything else propagates and fails the test


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(url=url_like, ans=answers)
def test_fetch_url_only_raises_minirag_error_and_never_dials_a_private_address(url, ans, net):
    net.connects.clear()
    # the guard refuses every public target, so each example ends in a refusal or a fetch error
    try:
        fetch_url(url, resolver=_resolver(ans), timeout=1)
    except MiniragError as e:
        assert str(e)
    else:
        pytest.fail("nothing can be fetched here")
    assert all(_refusal_reason(ipaddress.ip_address(h)) is None for h, _ in net.connects), net.connects


@settings(max_examples=800, deadline=None)
@given(st.text("0123456789abcdefxX.", min_size=1, max_size=20))
def test_inet_aton_parser_matches_the_c_library(s):
    try:
        expected = socket.inet_ntoa(socket.inet_aton(s))
    except OSError:
        expected = None
    got = _inet_aton(s.lower())
    assert (str(got) if got else None) == expected


def _spellings(ip):
    n, b = int(ip), ip.packed
    return [
        str(ip),
        str(n),
        hex(n),
        "0" + oct(n)[2:],
        ".".join("0%o" % x for x in b),
        ".".join(hex(x) for x in b),
        f"{b[0]}.{int.from_bytes(b[1:], 'big')}",
        f"{b[0]}.{b[1]}.{int.from_bytes(b[2:], 'big')}",
        f"{hex(b[0])}.0{int.from_bytes(b[1:], 'big'):o}",
    ]


non_public_v4 = st.sampled_from(
    [
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "224.0.0.0/4",
        "240.0.0.0/4",
    ]
).flatmap(
    lambda net: st.integers(0, ipaddress.ip_network(net).num_addresses - 1).map(lambda i: ipaddress.ip_network(net)[i])
)


@settings(max_examples=200, deadline=None)
@given(non_public_v4)
def test_every_spelling_of_a_non_public_ipv4_is_refused(ip):
    for s in _spellings(ip) + [f"[::ffff:{ip}]"]:
        with pytest.raises(UrlRefused):
            check_url(f"http://{s}/", resolver=lambda h: pytest.fail(f"{s} was treated as a name"))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address))
def test_spellings_agree_with_the_canonical_form(ip):
    expected = _refusal_reason(ip)
    for s in _spellings(ip):
        assert _refusal_reason(_inet_aton(s)) == expected, s


# --- fetch_url: positive paths ------------------------------------------------------------------
@pytest.mark.parametrize(
    "path,ctype,charset,body",
    [
        ("/plain", "text/plain", "utf-8", b"hello plain\n"),
        ("/html", "text/html", "utf-8", HTML),
        ("/json", "application/json", None, b'{"a": [1, 2]}'),
        ("/latin1", "text/plain", "iso-8859-1", "café".encode("latin-1")),
    ],
)
def test_fetch_content_types(server, path, ctype, charset, body, net):
    f = fetch_url(server.base + path, allow_private=True)
    assert isinstance(f, Fetched)
    assert (f.url, f.final_url, f.content, f.content_type, f.charset) == (
        server.base + path,
        server.base + path,
        body,
        ctype,
        charset,
    )
    assert net.connects == [("127.0.0.1", server.port)]


def test_fetch_sends_host_header_and_query(server):
    fetch_url(server.base + "/plain?q=1&r=%20#frag", allow_private=True)
    assert server.requests[-1][:2] == ("/plain?q=1&r=%20", f"127.0.0.1:{server.port}")


def test_non_ascii_path_is_percent_encoded(server):
    assert fetch_url(server.base + "/café", allow_private=True).content == "café".encode()
    assert paths(server) == ["/caf%C3%A9"]


def test_content_disposition_filename(server):
    f = fetch_url(server.base + "/download", allow_private=True)
    assert (f.filename, f.content_type) == ("t.csv", "application/octet-stream")


def test_private_server_refused_without_allow_private(server, net):
    with pytest.raises(UrlRefused, match=f"host '127.0.0.1' is loopback"):
        fetch_url(server.base + "/plain")
    assert net.connects == [] and server.requests == []


# --- redirects ---------------------------------------------------------------------------------
def test_five_redirects_are_followed(server):
    f = fetch_url(server.base + "/chain/5", allow_private=True)
    assert f.content == b"end of chain" and f.final_url == server.base + "/chain/0"
    assert paths(server) == [f"/chain/{i}" for i in (5, 4, 3, 2, 1, 0)]


def test_sixth_redirect_is_refused(server):
    with pytest.raises(FetchError, match="more than 5 redirects"):
        fetch_url(server.base + "/chain/6", allow_private=True)
    assert paths(server) == [f"/chain/{i}" for i in (6, 5, 4, 3, 2, 1)]  # /chain/0 never requested


def test_max_redirects_parameter(server):
    with pytest.raises(FetchError, match="more than 0 redirects"):
        fetch_url(server.base + "/chain/1", allow_private=True, max_redirects=0)
    assert fetch_url(server.base + "/chain/0", allow_private=True, max_redirects=0).content == b"end of chain"


def test_relative_redirect(server):
    f = fetch_url(server.base + "/rel/a/b", allow_private=True)
    assert (f.content, f.final_url) == (b"relative ok", server.base + "/rel/target?x=1")


def test_redirect_without_location_is_an_http_error(server):
    with pytest.raises(FetchError, match="HTTP 302"):
        fetch_url(server.base + "/noloc", allow_private=True)


@pytest.mark.parametrize(
    "target,msg", [("file:///etc/passwd", "file: is not allowed"), ("ftp://example.com/x", "ftp: is not allowed")]
)
def test_redirect_to_other_scheme_refused(server, target, msg):
    with pytest.raises(UrlRefused, match=msg):
        fetch_url(f"{server.base}/go?to={target}", allow_private=True)


@pytest.mark.parametrize(
    "hop2",
    [
        "http://127.0.0.1:{port}/secret",
        "http://0x7f.1:{port}/secret",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://internal.example:{port}/secret",
        "/secret",
    ],
)
def test_redirect_from_public_host_to_private_is_refused_on_the_hop(server, net, hop2):
    # hop 1: a public-looking name whose public answer the test NAT routes to the loopback server;
    # hop 2: a private target, which must be refused before any connection is made.
    net.nat[(PUBLIC, server.port)] = ("127.0.0.1", server.port)
    resolve = names({"www.public.example": [PUBLIC], "internal.example": ["10.0.0.9"]})
    to = hop2.format(port=server.port)
    if to == "/secret":  # same public host: the hop is re-resolved, and this time DNS answers loopback
        resolve = names({"www.public.example": lambda n: [PUBLIC] if n == 1 else ["127.0.0.1"]})
    with pytest.raises(UrlRefused, match="only public addresses"):
        fetch_url(f"http://www.public.example:{server.port}/go?to={to}", resolver=resolve)
    assert paths(server) == [f"/go?to={to}"]  # /secret never requested
    assert net.connects == [(PUBLIC, server.port)]  # one connection, to the validated address


def test_redirect_to_public_host_is_followed(server, net):
    net.nat[(PUBLIC, server.port)] = ("127.0.0.1", server.port)
    resolve = names({"www.public.example": [PUBLIC], "cdn.public.example": [PUBLIC]})
    f = fetch_url(
        f"http://www.public.example:{server.port}/go?to=http://cdn.public.example:{server.port}/plain", resolver=resolve
    )
    assert f.content == b"hello plain\n" and f.final_url == f"http://cdn.public.example:{server.port}/plain"
    assert [r[1] for r in server.requests] == [f"www.public.example:{server.port}", f"cdn.public.example:{server.port}"]


# --- DNS rebinding: the connection goes to the address that was checked -----------------------------------------------
def test_rebinding_connection_goes_only_to_the_validated_address(server, net):
    # DNS answers a public address to the check and loopback to anyone who asks again.
    resolve = names({"rebind.example": lambda n: [PUBLIC] if n == 1 else ["127.0.0.1"]})
    with pytest.raises(FetchError, match="could not connect to 'rebind.example'"):
        fetch_url(f"http://rebind.example:{server.port}/secret", resolver=resolve)
    assert resolve.calls == {"rebind.example": 1}  # resolved once, never again
    assert net.connects == [(PUBLIC, server.port)]  # connect went to the validated IP
    assert net.lookups == [] and server.requests == []  # no system lookup; loopback never reached


def test_pinned_address_keeps_the_host_header(server, net):
    resolve = names({"docs.example": ["127.0.0.1"]})
    f = fetch_url(f"http://docs.example:{server.port}/plain", allow_private=True, resolver=resolve)
    assert f.content == b"hello plain\n"
    assert server.requests == [("/plain", f"docs.example:{server.port}", None)]
    assert net.connects == [("127.0.0.1", server.port)] and net.lookups == []


def test_next_validated_address_is_tried_when_the_first_refuses(server, net):
    resolve = names({"two.example": [PUBLIC, "127.0.0.1"]})
    f = fetch_url(f"http://two.example:{server.port}/plain", allow_private=True, resolver=resolve)
    assert f.content == b"hello plain\n"
    assert net.connects == [(PUBLIC, server.port), ("127.0.0.1", server.port)]


# --- TLS: SNI and certificate name checks use the name, the socket uses the pinned IP ---------------
@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("openssl CLI not available to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=docs.example",
            "-addext",
            "subjectAltName=DNS:docs.example",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-keyout",
            str(d / "key.pem"),
            "-out",
            str(d / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    return d / "cert.pem", d / "key.pem"


@pytest.fixture
def tls_server(cert):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*map(str, cert))
    seen = []
    ctx.sni_callback = lambda sock, name, c: seen.append(name)
    srv = _serve(ctx)
    srv.port, srv.sni = srv.server_address[1], seen
    yield srv
    srv.shutdown()
    srv.server_close()


def test_https_pinned_with_sni_and_host_header(tls_server, cert, net):
    client = ssl.create_default_context(cafile=str(cert[0]))
    f = fetch_url(
        f"https://docs.example:{tls_server.port}/html",
        allow_private=True,
        resolver=lambda h: ["127.0.0.1"],
        ssl_context=client,
    )
    assert f.content == HTML
    assert tls_server.sni == ["docs.example"]
    assert tls_server.requests[0][1] == f"docs.example:{tls_server.port}"
    assert net.connects == [("127.0.0.1", tls_server.port)]


def test_https_certificate_must_match_the_name_not_the_ip(tls_server, cert):
    client = ssl.create_default_context(cafile=str(cert[0]))
    with pytest.raises(FetchError, match="TLS certificate check failed for 'other.example'"):
        fetch_url(
            f"https://other.example:{tls_server.port}/html",
            allow_private=True,
            resolver=lambda h: ["127.0.0.1"],
            ssl_context=client,
        )
    assert tls_server.requests == []


def test_https_verifies_by_default(tls_server):
    with pytest.raises(FetchError, match="TLS certificate check failed for 'docs.example'"):
        fetch_url(f"https://docs.example:{tls_server.port}/html", allow_private=True, resolver=lambda h: ["127.0.0.1"])
    assert tls_server.requests == []


def test_https_to_plain_server_is_a_clear_error(server):
    with pytest.raises(FetchError, match="TLS error talking to '127.0.0.1'"):
        fetch_url(f"https://127.0.0.1:{server.port}/plain", allow_private=True, timeout=2)


# --- limits and failures -----------------------------------------------------------------------
def test_declared_oversize_body_refused(server):
    with pytest.raises(FetchError, match=r"larger than 4,999 bytes \(MAX_FILE_SIZE\)"):
        fetch_url(server.base + "/big", allow_private=True, max_bytes=4999)
    assert len(fetch_url(server.base + "/big", allow_private=True, max_bytes=5000).content) == 5000


def test_streamed_oversize_body_stops_early(server):
    t0 = time.monotonic()
    with pytest.raises(FetchError, match=r"larger than 100,000 bytes \(MAX_FILE_SIZE\).*raise MAX_FILE_SIZE"):
        fetch_url(server.base + "/stream", allow_private=True, max_bytes=100_000)
    assert time.monotonic() - t0 < 5
    for _ in range(50):  # the server notices the closed connection long before its 16 MB are sent
        if server.stream_aborted:
            break
        time.sleep(0.1)
    assert server.stream_aborted


def test_slow_response_times_out(server):
    t0 = time.monotonic()
    with pytest.raises(FetchError, match="timed out after 1 s"):
        fetch_url(server.base + "/slow", allow_private=True, timeout=1)
    assert time.monotonic() - t0 < 1.9


def test_stalled_body_times_out(server):
    with pytest.raises(FetchError, match="timed out after 0.5 s"):
        fetch_url(server.base + "/drip", allow_private=True, timeout=0.5)


@pytest.mark.parametrize("code", [400, 403, 404, 410, 500, 503])
def test_http_error_status(server, code):
    with pytest.raises(FetchError, match=f"HTTP {code}"):
        fetch_url(f"{server.base}/status/{code}", allow_private=True)


def test_truncated_body_is_a_fetch_error(server):
    with pytest.raises(FetchError, match=r"from '127.0.0.1' was cut short \(10 of 1,000 bytes\)"):
        fetch_url(server.base + "/short", allow_private=True, timeout=2)


def test_nothing_listening_is_a_fetch_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(FetchError, match=f"could not connect to '127.0.0.1' port {port}"):
        fetch_url(f"http://127.0.0.1:{port}/", allow_private=True, timeout=2)


def test_garbage_response_is_a_fetch_error():
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]

    def reply():
        c, _ = lsock.accept()
        c.recv(1024)
        c.sendall(b"SSH-2.0-OpenSSH\r\n" * 3)
        c.close()

    threading.Thread(target=reply, daemon=True).start()
    try:
        with pytest.raises(FetchError, match="malformed HTTP response"):
            fetch_url(f"http://127.0.0.1:{port}/", allow_private=True, timeout=2)
    finally:
        lsock.close()


# --- url_to_markdown -------------------------------------------------------------------------------
def test_markdown_from_html_with_title(server, net):
    md, title = url_to_markdown(server.base + "/html", allow_private=True)
    assert title == "Test page"
    assert "# Heading" in md and "**bold**" in md and "<p>" not in md
    assert net.connects == [("127.0.0.1", server.port)]  # markitdown made no connection of its own


def test_markdown_from_plain_text_has_no_title(server):
    assert url_to_markdown(server.base + "/plain", allow_private=True) == ("hello plain\n", None)


def test_markdown_from_json(server):
    md, title = url_to_markdown(server.base + "/json", allow_private=True)
    assert '"a"' in md and title is None


def test_markdown_respects_charset(server):
    assert url_to_markdown(server.base + "/latin1", allow_private=True)[0] == "café"


def test_markdown_uses_content_disposition_extension(server):
    md, _ = url_to_markdown(server.base + "/download", allow_private=True)
    assert "| a | b |" in md and "| 1 | 2 |" in md


def test_markdown_rss_handling(server):
    md, title = url_to_markdown(server.base + "/rss", allow_private=True)
    assert title == "Feed title" and "First item" in md and "Item body" in md


def test_markdown_wikipedia_handling_keys_on_final_url(server, net):
    # markitdown's Wikipedia converter only runs for *.wikipedia.org URLs: route that name to the
    # loopback server through the test NAT (port 80 -> test port) and check the special handling ran.
    net.nat[(PUBLIC, 80)] = ("127.0.0.1", server.port)
    md, title = url_to_markdown("http://en.wikipedia.org/wiki/Turtle", resolver=lambda h: [PUBLIC])
    assert title == "Turtle" and "Turtles are reptiles." in md
    assert "NAVIGATION JUNK" not in md  # only mw-content-text was kept
    md2, _ = url_to_markdown(server.base + "/wiki/Turtle", allow_private=True)
    assert "NAVIGATION JUNK" in md2  # same bytes, other URL: generic HTML


def test_markdown_errors_pass_through(server):
    with pytest.raises(UrlRefused):
        url_to_markdown("file:///etc/passwd")
    with pytest.raises(UrlRefused):
        url_to_markdown(server.base + "/html")
    with pytest.raises(FetchError, match="HTTP 404"):
        url_to_markdown(server.base + "/status/404", allow_private=True)
    with pytest.raises(FetchError, match="MAX_FILE_SIZE"):
        url_to_markdown(server.base + "/big", allow_private=True, max_bytes=10)
