"Foundation: real DuckDB files, the real packaged model, hybrid search rules, CLI core."

import json, os, socket, subprocess, sys
from pathlib import Path
import pytest
from conftest import write
from minirag.api import Index
from minirag.config import MiniragError
from minirag.wire import to_wire  # the typed results as the MCP tools return them

DOCS = {
    "network.md": (
        "# Network errors\n\n## Refused\n\nThe browser shows a refused connection when nothing listens on the port.\n\n"
        "## Timeouts\n\nA timeout means the host did not answer in time.\n"
    ),
    "errors-catalog.md": (
        "# Error catalog\n\nERR_CONNECTION_REFUSED is raised by the proxy module when the upstream closes the socket.\n"
    ),
    "import.md": "# Import tool\n\nWhen the header row is empty the importer stops with E-1042 and writes nothing.\n",
    "release.md": "# Releases\n\nVersion v2.3.1 fixes the importer. Call my_func_name to migrate settings.\n",
    "bread.md": "# Baking bread\n\nKnead the dough for ten minutes and let it rise for an hour in a warm place.\n",
    "servers-ru.md": "# Серверы\n\nНа сервере базы данных резервные копии создаются ежедневно.\n",
    "garden.md": "# Garden\n\nWater tomatoes in the morning; mulch keeps the soil moist during heat.\n",
}


@pytest.fixture
def corpus(index, root):
    for n, t in DOCS.items():
        write(root, n, t)
    write(
        root, "SPEC-112_Warehouse stock.md", "# 1. General provisions\n\nStock is counted at the end of each month.\n"
    )
    from minirag.api import ingest_paths

    r = to_wire(ingest_paths(index, [root]))
    assert r["failed"] == 0, r["warnings"]
    return index


def top_source(ix, q, **kw):
    return Path(to_wire(ix.query(q, **kw))["results"][0]["source"]).name


@pytest.mark.parametrize(
    "q,doc",
    [
        ("ERR_CONNECTION_REFUSED", "errors-catalog.md"),
        ("E-1042", "import.md"),
        ("v2.3.1", "release.md"),
        ("my_func_name", "release.md"),
        ("SPEC-112", "SPEC-112_Warehouse stock.md"),
    ],
)
def test_exact_identifiers_rank_their_document_first(corpus, q, doc):
    "R-Q10: an identifier present in one document ranks it first in hybrid mode."
    assert top_source(corpus, q) == doc


def test_identifier_is_found_by_keywords_even_when_vectors_miss_it(corpus):
    r = to_wire(corpus.query("E-1042", top_k=8))
    hit = next(h for h in r["results"] if h["source"].endswith("import.md"))
    assert hit["keywordRank"] == 0


def test_russian_inflections_match(corpus):
    "«сервер» finds «На сервере» / «Серверы» through the Russian stemmer."
    r = to_wire(corpus.query("сервер", top_k=3, weight=1.0))
    assert Path(r["results"][0]["source"]).name == "servers-ru.md"
    assert r["results"][0]["distance"] is None  # w=1 runs no vector search


def test_english_inflections_match(corpus):
    r = to_wire(corpus.query("kneading", top_k=3, weight=1.0))
    assert Path(r["results"][0]["source"]).name == "bread.md"


def test_semantic_search_works_with_the_real_model(corpus):
    "No shared keyword: the vector side alone must find the baking document."
    r = to_wire(corpus.query("how do I make a loaf rise", top_k=3, weight=0.0))
    assert Path(r["results"][0]["source"]).name == "bread.md"
    assert all(h["keywordRank"] is None for h in r["results"])


def test_response_shape(corpus, root):
    r = to_wire(corpus.query("connection refused", top_k=5))
    assert set(r["results"][0]) >= {
        "source",
        "title",
        "chunkIndex",
        "parentId",
        "text",
        "score",
        "distance",
        "vectorRank",
        "keywordRank",
    }
    assert sum(s["hits"] for s in r["sources"]) == len(r["results"])
    assert all(h["parentId"] in r["parents"] for h in r["results"])
    assert all(not s["displayPath"].startswith("/") for s in r["sources"])
    scores = [h["score"] for h in r["results"]]
    assert scores == sorted(scores, reverse=True)


def test_keyword_side_sees_ingest_and_delete_at_once(corpus, root):
    assert not any("ZEBRA-77" in h["text"] for h in to_wire(corpus.query("ZEBRA-77", weight=1.0))["results"])
    p = write(root, "zebra.md", "# Zebra\n\nCode ZEBRA-77 marks the striped pallets.\n")
    to_wire(corpus.ingest(p))
    assert top_source(corpus, "ZEBRA-77", weight=1.0) == "zebra.md"
    corpus.delete(p)
    assert not any(h["source"] == str(p) for h in to_wire(corpus.query("ZEBRA-77", weight=1.0))["results"])


def test_scoped_query_after_deletes_returns_the_true_top_k(index, root):
    "A scope and deletes never leave gaps: k hits come back whenever k exist in scope."
    for i in range(12):
        write(root, f"a/doc{i}.md", f"# Note {i}\n\nShipping schedule number {i} for the northern depot.\n")
        write(root, f"b/doc{i}.md", f"# Note {i}\n\nShipping schedule number {i} for the southern depot.\n")
    from minirag.api import ingest_paths

    to_wire(ingest_paths(index, [root]))
    for i in range(0, 12, 2):
        to_wire(index.delete(root / f"a/doc{i}.md"))
    r = to_wire(index.query("shipping schedule", top_k=5, scope=str(root / "a")))
    assert len(r["results"]) == 5
    assert all(h["source"].startswith(str(root / "a") + "/") for h in r["results"])
    assert not any(h["source"].endswith(("doc0.md", "doc2.md")) and "/a/" in h["source"] for h in r["results"])
    r = to_wire(index.query("shipping schedule", top_k=100, scope=str(root / "a"), weight=0.0))
    assert len(r["results"]) == 6


def test_vector_side_equals_exact_cosine_in_sql(corpus):
    "The vector side is exact: identical to DuckDB's array_cosine_distance ordering (recall@10 = 1.0)."
    from minirag.search import vector_search

    q = corpus.engine.embedder.embed_query("warehouse stock count")
    with corpus.store.session() as con:
        ours = [i for i, _ in vector_search(con, "t", q, 10)]
        dim = len(q)
        sql = [
            r[0]
            for r in con.execute(
                f"SELECT id FROM chunks ORDER BY array_cosine_distance(emb, ?::FLOAT[{dim}]), id LIMIT 10", [q.tolist()]
            ).fetchall()
        ]
    assert ours == sql


def test_model_mismatch_is_a_clear_error(corpus, root, tmp_path):
    from minirag.embed import Embedder

    class Other(Embedder):
        @property
        def model_id(self):
            return "other/model"

    ix2 = Index.open(
        root,
        model_name=corpus.cfg.model_name,
        cache_dir=corpus.cfg.cache_dir,
        embedder=Other(corpus.cfg.model_name, corpus.cfg.cache_dir),
    )
    with pytest.raises(MiniragError, match="built with model 'local:all-MiniLM-L6-v2-int8:.*other/model"):
        ix2.query("stock")
    with pytest.raises(MiniragError, match="vectors of different models cannot be mixed"):
        to_wire(ix2.ingest(root / "bread.md"))


def test_topk_rules(corpus):
    with pytest.raises(MiniragError, match="at least 1"):
        corpus.query("x", top_k=0)
    with pytest.raises(MiniragError, match="at least 1"):
        corpus.query("x", top_k=-3)
    with pytest.raises(MiniragError, match="limit is 4000"):
        corpus.query("x" * 5000)
    assert len(to_wire(corpus.query("the", top_k=1000))["results"]) <= 100


@pytest.mark.parametrize(
    "q", ['"unbalanced', "AND OR NOT", "((", "*:?!", "a -b +c ~d", "'; DROP TABLE chunks; --", "%_%"]
)
def test_hostile_keyword_syntax_never_errors(corpus, q):
    r = to_wire(corpus.query(q, top_k=3))
    assert len(r["results"]) == 3  # vector results still come back


def test_no_network_during_ingest_and_query(corpus, root, monkeypatch):
    "R-S11: sockets are blocked; ingest of a local file and a query still work."

    def refuse(*a, **k):
        raise AssertionError("network I/O attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    to_wire(corpus.ingest(write(root, "offline.md", "# Offline\n\nEverything here is local.\n")))
    assert to_wire(corpus.query("local", top_k=2))["results"]


def test_replace_keeps_old_chunks_when_new_version_yields_nothing(corpus, root):
    p = root / "garden.md"
    p.write_bytes(b"\x00\x00binary now")
    with pytest.raises(MiniragError):
        to_wire(corpus.ingest(p))
    assert to_wire(corpus.read(p))["text"].count("tomatoes") == 1


def test_status_does_not_load_the_model(corpus, root, model_dir):
    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent)
    s = to_wire(ix.status())
    assert s["sourceCount"] == len(DOCS) + 1 and s["chunkCount"] > 0 and s["staleChunkCount"] == 0
    assert ix.engine.embedder._model is None


# ---- CLI through real subprocesses -------------------------------------------------------------


def cli(*args, env=None, cwd=None):
    e = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "minirag.cli", *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=300
    )


def test_cli_ingest_query_read_list_delete(root, model_dir, tmp_path):
    for n, t in DOCS.items():
        write(root, n, t)
    common = ["--base-dir", str(root), "--model-name", str(model_dir), "--cache-dir", str(model_dir.parent)]
    r = cli("ingest", ".", *common, "--json", cwd=root)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ingested"] == len(DOCS)
    r = cli("query", "E-1042", "--top-k", "3", *common, "--json")
    q = json.loads(r.stdout)
    assert Path(q["results"][0]["source"]).name == "import.md" and "parents" in q and "sources" in q
    r = cli("query", "E-1042", *common)
    assert r.returncode == 0 and "import.md" in r.stdout.splitlines()[0]
    r = cli("read", "import.md", *common, cwd=root)
    assert "E-1042" in r.stdout
    r = cli("list", *common, "--json")
    assert {f["state"] for f in json.loads(r.stdout)["files"]} == {"indexed"}
    r = cli("delete", str(root / "import.md"), *common, "--json")
    assert json.loads(r.stdout)["deleted"] is True
    r = cli("delete", str(root / "import.md"), *common)
    assert r.returncode == 1 and r.stderr.startswith("error:") and "Traceback" not in r.stderr


def test_cli_status_with_broken_config_exits_zero(tmp_path):
    r = cli("status", "--json", env={"BASE_DIRS": "not json", "CHUNK_TOKEN_BUDGET": "900"}, cwd=tmp_path)
    assert r.returncode == 0
    s = json.loads(r.stdout)
    assert (
        set(s) == {"version", "configError"}
        and "BASE_DIRS" in s["configError"]
        and "CHUNK_TOKEN_BUDGET" in s["configError"]
    )
    r = cli("query", "x", env={"BASE_DIRS": "not json"}, cwd=tmp_path)
    assert r.returncode == 1 and "BASE_DIRS" in r.stderr and "Traceback" not in r.stderr


def test_cli_outside_root_refused(root, model_dir, tmp_path):
    (tmp_path / "outside.md").write_text("# secret")
    r = cli("ingest", str(tmp_path / "outside.md"), "--base-dir", str(root), "--model-name", str(model_dir))
    assert r.returncode == 1 and "outside the document roots" in (r.stdout + r.stderr)


def test_missing_hub_model_is_a_clear_error(tmp_path, monkeypatch):
    "R-M3: no hub reachable → the error names the model, the cache dir and the fix, fast."
    from minirag.embed import Embedder

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: (_ for _ in ()).throw(socket.gaierror("no DNS")))
    e = Embedder("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", tmp_path / "cache")
    with pytest.raises(MiniragError) as ei:
        e.embed(["x"])
    msg = str(ei.value)
    assert (
        "paraphrase-multilingual-MiniLM-L12-v2" in msg and str(tmp_path / "cache") in msg and "local directory" in msg
    )


# ---- chunker integration (issue 3) --------------------------------------------------------------


def test_read_rebuilds_a_30_row_table_as_one_table(index, root):
    rows = "\n".join(
        f"| item-{i:02d} | {i * 7} pallets stored in aisle {i % 5} near the loading dock |" for i in range(30)
    )
    p = write(root, "stock.md", "# Stock\n\n## Inventory\n\n| Item | Where |\n|---|---|\n" + rows + "\n")
    r = to_wire(index.ingest(p))
    assert r["chunkCount"] > 1  # the table really was split across chunks
    text = to_wire(index.read(p))["text"]
    assert text.count("| Item | Where |") == 1 and text.count("item-") == 30
    assert text.count("## Inventory") == 1 and text.startswith("# Stock") and text.count("# Stock") == 1


def test_every_chunk_respects_the_budget_with_the_real_tokenizer(index, root):
    long = " ".join(f"Sentence {i} explains one more detail of the warehouse process." for i in range(200))
    p = write(root, "long.md", "# Long\n\n" + long + "\n\n```python\n" + "x = 1\n" * 40 + "```\n")
    to_wire(index.ingest(p))
    rows = index.engine.tables.chunks_of(str(p))
    count = index.engine.counter.count
    budget = index.cfg.chunk_token_budget
    over = [r for r in rows if count(r["text"]) > budget and r["kind"] not in ("code",) and r["chunk_index"] != 0]
    assert not over
    assert count(rows[0]["text"]) <= 128  # chunk 0 carries the title and still fits the model


def test_stale_scheme_is_reported(index, root, monkeypatch):
    to_wire(index.ingest(write(root, "a.md", "# A\n\nSome text about apples.\n")))
    assert to_wire(index.status())["staleChunkCount"] == 0 and to_wire(index.status())["schemeWarning"] is None
    import minirag.api

    monkeypatch.setattr(minirag.api, "SCHEME_VERSION", minirag.api.SCHEME_VERSION + 1)
    s = to_wire(index.status())
    assert s["staleChunkCount"] > 0 and "older chunking scheme" in s["schemeWarning"]
    assert [f["state"] for f in to_wire(index.list_files())["files"]] == ["outdatedScheme"]  # same bytes, older scheme


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(before=-1), "before=-1"),
        (dict(after=51), "after=51"),
        (dict(before="x"), "before='x'"),
        (dict(before=1.5), "before=1.5"),
        (dict(chunk_index=-2), "chunkIndex=-2"),
    ],
)
def test_neighbour_bounds_are_validated(index, root, kw, msg):
    p = write(root, "n.md", "# N\n\nOne.\n\n## Two\n\nTwo.\n")
    to_wire(index.ingest(p))
    args = dict(chunk_index=0, file_path=p)
    args.update(kw)
    with pytest.raises(MiniragError, match=msg.replace("(", r"\(")):
        to_wire(index.read_neighbors(**args))


def test_neighbours_out_of_range_is_empty(index, root):
    p = write(root, "n.md", "# N\n\nOne.\n\n## Two\n\nTwo.\n")
    to_wire(index.ingest(p))
    assert to_wire(index.read_neighbors(500, file_path=p))["chunks"] == []
    got = to_wire(index.read_neighbors(1, file_path=p, before=1, after=1))["chunks"]
    assert [c["chunkIndex"] for c in got][:2] == [0, 1] and sum(c["isTarget"] for c in got) == 1
