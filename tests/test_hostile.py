"""Hostile inputs, generated with hypothesis, against a real index and the real packaged model.

Every property asserts: no exception other than `MiniragError` escapes, no message carries a traceback,
and nothing from outside the roots ever comes back. The number of inputs tried is printed at the end
of the module (run with `-s` to see it) and written to `$MINIRAG_HOSTILE_COUNTS` when that is set."""

import json, math, os, time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
import pytest
from hypothesis import given, settings, example, HealthCheck, strategies as st
from conftest import write
from minirag.api import Index, ingest_paths
from minirag.config import MiniragError, load_config
from minirag.security import in_scope
from minirag.wire import to_wire  # the typed results as the MCP tools return them

SECRET = "OUTSIDESECRETQQ"
TRIED, SPENT, PASSED = Counter(), Counter(), Counter()
FAST = dict(
    deadline=None,
    database=None,
    derandomize=True,
    print_blob=False,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
)


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    total = sum(TRIED.values())
    print(f"\nhostile inputs tried: {total} {json.dumps(dict(sorted(TRIED.items())))}")
    print("of which answered (not refused): " + json.dumps(dict(sorted(PASSED.items()))))
    print("seconds per kind: " + json.dumps({k: round(v, 1) for k, v in sorted(SPENT.items())}))
    if os.environ.get("MINIRAG_HOSTILE_COUNTS"):
        Path(os.environ["MINIRAG_HOSTILE_COUNTS"]).write_text(json.dumps(dict(TRIED, total=total)))


@pytest.fixture(scope="module")
def world(tmp_path_factory, model_dir, shared_embedder):
    "A root with a few documents and data ids, an outside secret, links to it; cwd is the root."
    base = Path(os.path.realpath(tmp_path_factory.mktemp("hostile")))
    root, outside = base / "docs", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\nThe {SECRET} password of the pelican ledger.\n")
    write(root, "a.md", "# Harbour\n\nThe pelican ledger lists every ship in the harbour.\n")
    write(
        root,
        "sub/b.md",
        "# Lighthouse\n\nThe keeper writes the pelican ledger at night.\n\n## Lamps\n\nWicks are trimmed daily.\n",
    )
    write(root, "100%_x/c.txt", "Quartermaster notes about the pelican ledger.\n")
    os.symlink(outside / "secret.md", root / "link.md")
    os.symlink(outside, root / "outdir")
    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder)
    assert to_wire(ingest_paths(ix, [root]))["ingested"] == 3
    to_wire(ix.ingest_data("Data note about the pelican ledger.", "text", "notes/n1"))
    old = os.getcwd()
    os.chdir(root)
    yield SimpleNamespace(ix=ix, root=root, base=base, outside=outside)
    os.chdir(old)
    ix.close()


def attempt(kind, fn):
    "Run one hostile call: a result, or None after a clean MiniragError; anything else fails the property."
    TRIED[kind] += 1
    t = time.perf_counter()
    try:
        r = fn()
        PASSED[kind] += 1
        return r
    except MiniragError as e:
        m = str(e)
        assert "Traceback" not in m and 'File "' not in m, m[:300]
        assert SECRET not in m
        return None
    finally:
        SPENT[kind] += time.perf_counter() - t


def assert_no_escape(w, result):
    "Nothing from outside the roots in a result; every source is a file under the root or a data id."
    if result is None:
        return
    assert SECRET not in json.dumps(result, default=str, ensure_ascii=False)
    srcs = [result["source"]] if "source" in result else []
    srcs += [h["source"] for h in result.get("results", [])] + [
        s for s in result.get("files", []) if isinstance(s, str)
    ]
    for s in srcs:
        assert in_scope(s, str(w.root)) or not s.startswith("/"), s


# ---- path arguments ----------------------------------------------------------------------------------

SPECIAL_PATHS = [
    "",
    " ",
    ".",
    "..",
    "~",
    "~/",
    "~root/x.md",
    "~nobody-here/x",
    "/",
    "//",
    "\x00",
    "a\x00b.md",
    "a.md\x00.txt",
    "../outside/secret.md",
    "link.md",
    "outdir/secret.md",
    "outdir",
    "../../../../etc/passwd",
    "/etc/passwd",
    "/proc/self/environ",
    "/proc/self/cwd/a.md",
    "/dev/zero",
    "x" * 5000,
    "é" * 200,
    "\ud800.md",
    "a\udcff.md",
    "sub/../../outside/secret.md",
    "a.md",
    "./a.md",
    "sub//b.md",
    "sub/./b.md",
    "sub/b.md/",
    "sub",
    ".minirag",
    ".minirag/index.duckdb",
    "100%_x/c.txt",
    "100%_x",
    "%",
    "_",
    "*",
    "?",
    "$HOME/a.md",
    "..\\..\\x",
    "a.md/..",
    "file:///etc/passwd",
    "\n",
    "a\nb.md",
    "🙂.md",
    "CON",
    "sub/" + "y" * 255 + ".md",
    "/".join(["d"] * 2100),
]
_parts = st.sampled_from(
    ["..", ".", "a.md", "sub", "b.md", "outdir", "link.md", "secret.md", "outside", "~", "", "x" * 260, "é", "\x00"]
)
paths = st.one_of(
    st.sampled_from(SPECIAL_PATHS),
    st.text(max_size=80),
    st.lists(_parts, max_size=8).map("/".join),
    st.integers(0xD800, 0xDFFF).map(lambda c: f"a{chr(c)}.md"),
    st.text(min_size=250, max_size=5000),
)
anchors = st.sampled_from(["relative", "root", "outside", "base"])


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _anchored(w, rel, anchor):
    if anchor == "relative":
        return rel
    return str({"root": w.root, "outside": w.outside, "base": w.base}[anchor]) + "/" + rel


@settings(max_examples=150, **FAST)
@given(rel=paths, anchor=anchors, absolute=st.booleans())
@example(rel="../outside/secret.md", anchor="root", absolute=True).via("explicit")
@example(rel="link.md", anchor="root", absolute=False).via("explicit")
@example(rel="a.md", anchor="relative", absolute=False).via("explicit")
@example(rel="sub/../sub/b.md", anchor="root", absolute=True).via("explicit")
@example(rel="sub", anchor="relative", absolute=False).via("explicit")
@example(rel="outdir/secret.md", anchor="relative", absolute=False).via("explicit")
def test_path_arguments(world, rel, anchor, absolute):
    w = world
    ix = w.ix
    p = _anchored(w, rel, anchor)
    for name, fn in [
        ("ingest", lambda: to_wire(ix.ingest(p, must_be_absolute=absolute))),
        ("read", lambda: to_wire(ix.read(file_path=p, must_be_absolute=absolute))),
        (
            "read_neighbors",
            lambda: to_wire(ix.read_neighbors(0, file_path=p, before=1, after=1, must_be_absolute=absolute)),
        ),
        ("ingest_paths", lambda: to_wire(ingest_paths(ix, [p], must_be_absolute=absolute))),
        ("read_source", lambda: to_wire(ix.read(source=p)) if _utf8(p) else None),
    ]:  # surrogates: see the xfail below
        assert_no_escape(w, attempt(f"path:{name}", fn))
    r = attempt("path:delete", lambda: to_wire(ix.delete(file_path=p, must_be_absolute=absolute)))
    if r is not None:  # a real document was named: it must be one under the root; put it back
        assert in_scope(r["source"], str(w.root))
        to_wire(ix.ingest(r["source"]))


@pytest.mark.parametrize("call", ["read", "delete", "ingest_data", "query", "scope"])
def test_lone_surrogates_in_ids_and_queries(world, call):
    ix, bad = world.ix, "notes/\ud800"
    fn = {
        "read": lambda: to_wire(ix.read(source=bad)),
        "delete": lambda: to_wire(ix.delete(source=bad)),
        "ingest_data": lambda: to_wire(ix.ingest_data("text about pelicans", "text", bad)),
        "query": lambda: to_wire(ix.query("pelican \ud800")),
        "scope": lambda: to_wire(ix.query("pelican", scope=bad)),
    }[call]
    attempt("surrogate", fn)


# ---- scopes and queries --------------------------------------------------------------------------------

SPECIAL_SCOPES = [
    None,
    "",
    " ",
    "/",
    "//",
    "~",
    ".",
    "..",
    "%",
    "_",
    "'",
    '"',
    "\x00",
    "/etc",
    "notes",
    "notes/",
    "notes/n",
    "docs",
    "100%",
    "100%_",
    "a.md",
    "../outside",
    "'; DROP TABLE chunks; --",
    "x" * 5000,
    0,
    -1,
    3.5,
    True,
    False,
    [],
    ["x"],
]
scopes = st.one_of(st.sampled_from(SPECIAL_SCOPES), st.text(max_size=60), st.integers(), st.floats(allow_nan=True))
scope_anchor = st.sampled_from(["as is", "root", "outside", "root-prefix"])


@settings(max_examples=70, **FAST)
@given(scope=scopes, anchor=scope_anchor, weight=st.sampled_from([0.0, 0.6, 1.0]))
def test_scopes(world, scope, anchor, weight):
    w = world
    if isinstance(scope, str) and anchor != "as is":
        scope = {"root": str(w.root) + "/", "outside": str(w.outside) + "/", "root-prefix": str(w.root)}[anchor] + scope
    r = attempt("scope", lambda: to_wire(w.ix.query("pelican ledger", top_k=10, scope=scope, weight=weight)))
    assert_no_escape(w, r)
    if r and not isinstance(scope, (str, list)) and scope is not None:
        assert weight == 0.0 and not scope, scope  # only the search.py `if scope:` gap lets these through (xfail below)
    elif r and scope is not None:  # one scope, or a list of them (a union)
        assert all(in_scope(h["source"], scope if isinstance(scope, list) else str(scope)) for h in r["results"]), scope


@pytest.mark.parametrize("scope", [0, False, []])
def test_falsy_non_text_scope_is_refused_on_the_vector_side(world, scope):
    with pytest.raises(MiniragError):
        world.ix.query("pelican", scope=scope, weight=0.0)


FTS = [
    '"unbalanced',
    "AND OR NOT",
    "((",
    ")",
    "*:?!",
    "a -b +c ~d",
    "'; DROP TABLE chunks; --",
    "%_%",
    "NEAR(a b)",
    "a:b",
    "\\",
    "\x00",
    "\x1b[31m",
    "\u202e",
    "\ufeff",
    "𝔭𝔢𝔩𝔦𝔠𝔞𝔫",
    "pelican" * 600,
    "p" * 4000,
    "p" * 4001,
    " \t\n ",
    "^",
    "{}",
    "[]",
]
queries = st.one_of(
    st.sampled_from(FTS),
    st.text(max_size=200),
    st.text(alphabet=st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "P", "S"]), max_size=100),
    st.lists(st.sampled_from(FTS + ["pelican", "ledger", "OR", "NOT"]), max_size=6).map(" ".join),
    st.text(min_size=3990, max_size=5000),
)


@settings(max_examples=80, **FAST)
@given(q=queries, weight=st.sampled_from([0.0, 0.6, 1.0]))
def test_queries(world, q, weight):
    r = attempt("query", lambda: to_wire(world.ix.query(q, top_k=5, weight=weight)))
    assert_no_escape(world, r)
    if r:
        assert len(r["results"]) <= 5 and sum(s["hits"] for s in r["sources"]) == len(r["results"])
    if isinstance(q, str) and q.strip() and len(q) <= 4000 and weight < 1:
        assert r and r["results"]  # vector side always answers


# ---- numbers: topK, before, after, chunkIndex ------------------------------------------------------------

numbers = st.one_of(
    st.integers(-5, 200),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=False),
    st.text(max_size=12),
    st.none(),
    st.booleans(),
    st.sampled_from(["5", " 7 ", "1e3", "0x10", "-1", "٣", "1_0", "", "NaN", 2.0, 2.5, -0.0, 10**30, [], {}]),
)


@settings(max_examples=120, **FAST)
@given(k=numbers)
def test_top_k_values(world, k):
    r = attempt("topK", lambda: to_wire(world.ix.query("pelican ledger", top_k=k, weight=1.0)))
    assert_no_escape(world, r)
    if r:
        assert len(r["results"]) <= 100


@settings(max_examples=150, **FAST)
@given(ci=numbers, before=numbers, after=numbers, target=st.sampled_from(["file", "data"]))
def test_neighbor_values(world, ci, before, after, target):
    kw = dict(file_path=str(world.root / "sub/b.md")) if target == "file" else dict(source="notes/n1")
    r = attempt("neighbors", lambda: to_wire(world.ix.read_neighbors(ci, before=before, after=after, **kw)))
    assert_no_escape(world, r)
    if r:
        assert len(r["chunks"]) <= 101 and sum(c["isTarget"] for c in r["chunks"]) <= 1


@pytest.mark.parametrize("k", [math.inf, -math.inf])
def test_infinite_top_k(world, k):
    attempt("topK", lambda: to_wire(world.ix.query("pelican", top_k=k)))


@pytest.mark.parametrize("weight", ["abc", [], {}])
def test_weight_values(world, weight):
    attempt("weight", lambda: to_wire(world.ix.query("pelican", weight=weight)))


# ---- configuration from the environment ---------------------------------------------------------------

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
ENV_SPECIAL = [
    "",
    " ",
    "0",
    "1",
    "-1",
    "16",
    "15",
    "128",
    "129",
    "0.0",
    "1.0",
    "1.5",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e309",
    "0x10",
    "1_000",
    "٣",
    "+5",
    " 5 ",
    "true",
    "yes",
    "on",
    "off",
    "maybe",
    "TRUE",
    "similar",
    "related",
    "Similar",
    "[]",
    '[""]',
    '["/"]',
    '["/etc"]',
    '["."]',
    "[1]",
    "{}",
    "null",
    '"x"',
    "/",
    "/etc",
    "~",
    "~/.ssh",
    ".",
    "..",
    "docs",
    "auto",
    "en",
    "tesseract:rus+eng",
    "tesseract:",
    "rapidocr:xx",
    "x" * 3000,
]
env_value = st.one_of(
    st.sampled_from(ENV_SPECIAL), st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)
)


def _invalid(name: str, raw: str) -> bool | None:
    "Whether SPEC §9 calls this value invalid (None: no simple rule, e.g. paths and model names)."
    v = raw.strip()

    def num(cast, lo=None, hi=None, finite=True):
        if v == "":
            return False
        try:
            x = cast(v)
        except (ValueError, OverflowError):
            return True
        if cast is float and math.isnan(x):
            return None  # covered by test_environment_nan (xfail)
        if cast is float and finite and math.isinf(x):
            return True
        return (lo is not None and x < lo) or (hi is not None and x > hi)

    if name == "MAX_FILE_SIZE":
        return num(int, 1)
    if name == "CHUNK_TOKEN_BUDGET":
        return num(int, 16, 128)
    if name == "RAG_HYBRID_WEIGHT":
        return num(float, 0.0, 1.0)
    if name == "RAG_MAX_DISTANCE":
        return num(float, 0.0, finite=False)
    if name == "RAG_MAX_FILES":
        return num(int, 1)
    if name == "RAG_OCR_MIN_CHARS_PER_PAGE":
        return num(int, 0)
    if name == "RAG_GROUPING":
        return v.lower() not in ("", "similar", "related")
    if name == "ALLOW_PRIVATE_URLS":
        return v.lower() not in ("", "1", "true", "yes", "on", "0", "false", "no", "off")
    return None


@settings(max_examples=250, **FAST)
@given(env=st.dictionaries(st.sampled_from(ENV_VARS), env_value, min_size=1, max_size=5))
@example(env={"RAG_HYBRID_WEIGHT": "0.5", "RAG_MAX_DISTANCE": "inf"}).via("explicit")
def test_environment_values(world, env):
    "Config never raises; an invalid value is cfg.error naming the variable; status answers either way."
    TRIED["env"] += 1
    cfg = load_config(env, cwd=world.root)
    for k, v in env.items():
        bad = _invalid(k, v)
        if bad is True:
            assert cfg.error and k in cfg.error, (k, v, cfg.error)
        if bad is False and cfg.error:
            assert f"{k}=" not in cfg.error, (k, v, cfg.error)
    if cfg.error:
        assert any(k in cfg.error for k in env), cfg.error
    s = to_wire(Index(cfg).status())
    assert (s.get("configError") is not None) == bool(cfg.error)


@pytest.mark.parametrize(
    "env",
    [{"BASE_DIRS": '["docs\\u0000x"]'}, {"BASE_DIRS": '["\\ud800"]'}, {"DB_PATH": "a\x00b"}, {"CACHE_DIR": "c\x00"}],
)
def test_environment_paths_with_nul_or_surrogates(world, env):
    cfg = load_config(env, cwd=world.root)
    assert cfg.error and next(iter(env)) in cfg.error


@pytest.mark.parametrize("env", [{"RAG_HYBRID_WEIGHT": "nan"}, {"RAG_MAX_DISTANCE": "nan"}])
def test_environment_nan(world, env):
    assert load_config(env, cwd=world.root).error


# ---- document bytes ------------------------------------------------------------------------------------

EXTS = [".md", ".txt", ".html", ".csv", ".pdf", ".docx", ".xlsx", ".pptx", ".epub", ".ipynb"]
MAGIC = [
    b"",
    b"%PDF-1.4\n",
    b"PK\x03\x04",
    b"PK\x05\x06" + b"\x00" * 18,
    b"{",
    b'{"cells": ',
    b"<html><title>",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xfe\xff",
    b"# ",
    b"|a|b|\n|-|-|\n",
    b"```\n",
    b"![x](data:image/png;base64,",
]


@settings(max_examples=130, **FAST)
@given(ext=st.sampled_from(EXTS), magic=st.sampled_from(MAGIC), body=st.binary(max_size=3000))
def test_document_bytes(world, ext, magic, body):
    "Random bytes under every extension: indexed (then readable, then removed) or a MiniragError."
    w = world
    n = TRIED["document bytes"]
    p = w.root / "hostile" / f"doc{n}{ext}"
    p.parent.mkdir(exist_ok=True)
    p.write_bytes(magic + body)
    try:
        r = attempt("document bytes", lambda: to_wire(w.ix.ingest(p)))
        if r:
            assert r["chunkCount"] >= 1 and r["source"] == str(p)
            assert_no_escape(w, to_wire(w.ix.read(file_path=p)))
            w.ix.delete(file_path=p)
    finally:
        p.unlink()


@settings(max_examples=60, **FAST)
@given(text=st.text(max_size=3000), ext=st.sampled_from([".md", ".txt", ".csv", ".html"]))
def test_document_text(world, text, ext):
    "Random Unicode text (control characters, odd Markdown) through convert → chunk → embed → store."
    w = world
    n = TRIED["document text"]
    p = w.root / "hostile" / f"text{n}{ext}"
    p.parent.mkdir(exist_ok=True)
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        r = attempt("document text", lambda: to_wire(w.ix.ingest(p)))
        if r:
            back = to_wire(w.ix.read(file_path=p))["text"]
            assert back.strip() and SECRET not in back
            w.ix.delete(file_path=p)
    finally:
        p.unlink()


@settings(max_examples=50, **FAST)
@given(
    content=st.text(max_size=2000),
    fmt=st.sampled_from(["text", "markdown", "html", "pdf", "", None]),
    source=st.one_of(
        st.sampled_from(["notes/h", "/etc/passwd", "", " ", "a\x00b", "x" * 600, "../up", "notes/n1/"]),
        st.text(max_size=30),
    ),
    title=st.one_of(st.none(), st.text(max_size=200)),
)
def test_ingest_data_values(world, content, fmt, source, title):
    r = attempt("ingest_data", lambda: to_wire(world.ix.ingest_data(content, fmt, source, title)))
    assert_no_escape(world, r)
    if r and r["source"] != "notes/n1":
        to_wire(world.ix.delete(source=r["source"]))
    elif r:
        to_wire(world.ix.ingest_data("Data note about the pelican ledger.", "text", "notes/n1"))
