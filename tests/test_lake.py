"""A team index on a real PostgreSQL + DuckLake: backend selection, every CLI command on the lake, the same ranking as
the file backend, and settings errors. The server is Debian's PostgreSQL in a temporary folder (tests/pg.py)."""

import json, os, subprocess, sys
from pathlib import Path
import pytest
from conftest import need_tool, write
from pg import need_team_extra
from test_server import page_url  # noqa: F401  (a fixture: a local page for ingest_url)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pg():
    need_tool("postgresql")
    need_team_extra()
    from pg import Postgres

    with Postgres() as server:
        yield server


def lake_env(pg, tmp_path, model_dir, root, home="home"):
    "The environment of one 'machine': its own home and caches; the catalog and the data path shared."
    return dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / home),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        MINIRAG_CATALOG=pg.lake_url,
        MINIRAG_DATA=str(tmp_path / "lake-data"),
        PYTHONPATH=str(REPO),
    )


def cli(env, *args, ok=True):
    r = subprocess.run(
        [sys.executable, "-m", "minirag.cli", *args], capture_output=True, text=True, timeout=300, env=env
    )
    assert "Traceback" not in r.stderr, r.stderr
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture
def lake(pg, tmp_path, model_dir, root):
    pg.lake_url = pg.new_database()
    return lake_env(pg, tmp_path, model_dir, root)


def test_settings_are_validated():
    from minirag.config import load_config

    cfg = load_config(env=dict(MINIRAG_CATALOG="postgresql://u@h/db"))
    assert "MINIRAG_CATALOG is set but MINIRAG_DATA is not" in cfg.error
    cfg = load_config(env=dict(MINIRAG_DATA="/mnt/team/minirag"))
    assert "MINIRAG_DATA is set but MINIRAG_CATALOG is not" in cfg.error
    cfg = load_config(env=dict(MINIRAG_CATALOG="mysql://h/db", MINIRAG_DATA="/x"))
    assert "MINIRAG_CATALOG='mysql://h/db' is not a PostgreSQL URL" in cfg.error
    cfg = load_config(env=dict(MINIRAG_CATALOG="postgresql://h/db", MINIRAG_DATA="rel/dir"))
    assert "MINIRAG_DATA='rel/dir' must be an absolute folder or an s3:// prefix" in cfg.error
    cfg = load_config(env=dict(MINIRAG_CATALOG="postgresql://h/db", MINIRAG_DATA="s3://bucket/minirag"))
    assert cfg.error is None and cfg.data_path == "s3://bucket/minirag"


def test_every_cli_command_on_a_lake(lake, root):
    write(
        root, "bread.md", "# Bread\n\nKnead the dough for ten minutes and let it rise.\n\n## Baking\n\nBake at 220 C.\n"
    )
    write(root, "tea.md", "# Tea\n\nSteep green tea at 80 degrees for two minutes.\n")
    r = json.loads(cli(lake, "sync", "--json").stdout)
    assert r["ingested"] == 2 and r["failed"] == 0, r
    st = json.loads(cli(lake, "status", "--json").stdout)
    assert st["sourceCount"] == 2 and st["chunkCount"] >= 2, st
    assert st.get("indexBytes", 0) > 0, st
    q = json.loads(cli(lake, "query", "how long to knead dough", "--json").stdout)
    assert q["results"][0]["source"].endswith("bread.md"), q
    doc = json.loads(cli(lake, "read", str(root / "tea.md"), "--json").stdout)
    assert "Steep green tea" in doc["text"], doc
    ls = json.loads(cli(lake, "list", "--json").stdout)
    assert sorted((f["displayPath"], f["state"]) for f in ls["files"]) == [
        ("bread.md", "indexed"),
        ("tea.md", "indexed"),
    ]
    nb = json.loads(
        cli(lake, "read-neighbors", "--file-path", str(root / "bread.md"), "--chunk-index", "0", "--json").stdout
    )
    assert "Knead the dough" in json.dumps(nb), nb
    write(root, "coffee.md", "# Coffee\n\nGrind the beans just before brewing.\n")
    r = json.loads(cli(lake, "ingest", str(root / "coffee.md"), "--json").stdout)
    assert r["ingested"] == 1 and r["files"][0].endswith("coffee.md"), r
    d = json.loads(cli(lake, "delete", str(root / "tea.md"), "--json").stdout)
    assert d["deleted"] is True, d
    q = json.loads(cli(lake, "query", "green tea", "--json").stdout)
    assert q["results"] and not any(h["source"].endswith("tea.md") for h in q["results"]), q
    (root / "bread.md").unlink()
    r = json.loads(cli(lake, "sync", "--json").stdout)
    assert (r["deleted"], r["ingested"]) == (1, 1), r  # bread.md gone; tea.md, deleted from the index only, is back
    st = json.loads(cli(lake, "status", "--json").stdout)
    assert st["sourceCount"] == 2, st


def test_an_unreachable_catalog_is_a_clear_error(pg, tmp_path, model_dir, root):
    write(root, "a.md", "# A\n\ntext\n")
    pg.lake_url = "postgresql://minirag@127.0.0.1:1/none"
    env = lake_env(pg, tmp_path, model_dir, root)
    for args in (["query", "text"], ["sync"], ["status"], ["list"]):
        r = cli(env, *args, ok=False)
        assert r.returncode != 0 and "check that the PostgreSQL server is running" in r.stderr, r.stderr
        assert "127.0.0.1:1/none" in r.stderr


EVAL = REPO / "bench" / "eval_sets" / "mandesc-fr"
EVAL_DOCS = 60  # the set's first pages and as many of its queries: a minute on a busy machine


def _eval_index(root_dir, home, model_dir, shared_embedder, env):
    from minirag.api import Index

    return Index.open(
        root_dir, db_path=home, model_name=str(model_dir), cache_dir=model_dir.parent, env=env, embedder=shared_embedder
    )


def test_same_top10_on_both_backends(pg, tmp_path, model_dir, shared_embedder):
    "Every query of an eval set ranks the same chunks in the same order on the file and on the lake."
    docs = tmp_path / "corpus"
    docs.mkdir()
    for line in EVAL.joinpath("corpus.jsonl").read_text(encoding="utf-8").splitlines()[:EVAL_DOCS]:
        d = json.loads(line)
        (docs / f"{d['_id']}.md").write_text(f"# {d.get('title') or d['_id']}\n\n{d['text']}\n", encoding="utf-8")
    queries = [json.loads(l)["text"] for l in EVAL.joinpath("queries.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = queries[:EVAL_DOCS]  # every set in full: bench/bench_lake.py
    file_ix = _eval_index(docs, tmp_path / "file-home", model_dir, shared_embedder, {})
    lake_ix = _eval_index(
        docs,
        tmp_path / "lake-home",
        model_dir,
        shared_embedder,
        dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=str(tmp_path / "data")),
    )
    assert file_ix.sync().ingested == len(list(docs.iterdir()))
    from minirag.lake import copy_index

    copy_index(file_ix.store, lake_ix.store)  # the same rows, not embedded twice: the ranking is what is compared
    assert lake_ix.sync().ingested == 0
    assert lake_ix.store.is_lake and not file_ix.store.is_lake
    differ = []
    for q in queries:
        a = [(h.source, h.chunk_index) for h in file_ix.query(q, top_k=10).hits]
        b = [(h.source, h.chunk_index) for h in lake_ix.query(q, top_k=10).hits]
        if a != b:
            differ.append((q, a[:3], b[:3]))
    assert not differ, f"{len(differ)} of {len(queries)} queries differ: {differ[:3]}"
    file_ix.close()
    lake_ix.close()


def _rows(ix):
    with ix.store.session() as con:
        chunks = con.execute(
            "SELECT source, chunk_index, text, scheme, kw_len, emb::FLOAT[] FROM chunks ORDER BY source, chunk_index"
        ).fetchall()
        posts = con.execute(
            "SELECT c.source, c.chunk_index, p.term, p.tf FROM postings p JOIN chunks c ON c.id = p.chunk_id "
            "ORDER BY ALL"
        ).fetchall()
        srcs = con.execute("SELECT * EXCLUDE (ingested_at) FROM sources ORDER BY source").fetchall()
    return chunks, posts, srcs


def test_copy_a_file_index_into_a_lake_and_back(pg, tmp_path, model_dir, root):
    write(
        root, "bread.md", "# Bread\n\nKnead the dough for ten minutes and let it rise.\n\n## Baking\n\nBake at 220 C.\n"
    )
    write(root, "tea.md", "# Tea\n\nSteep green tea at 80 degrees for two minutes.\n")
    base = dict(
        os.environ, BASE_DIR=str(root), MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent), PYTHONPATH=str(REPO)
    )
    file_env = dict(base, DB_PATH=str(tmp_path / "local"))
    cli(file_env, "sync")
    pg.lake_url = pg.new_database()
    lake = lake_env(pg, tmp_path, model_dir, root)
    r = json.loads(cli(lake, "copy", "--from", str(tmp_path / "local"), "--json").stdout)
    assert r["sources"] == 2 and r["chunks"] >= 3 and r["postings"] > 10, r
    q = json.loads(cli(lake, "query", "green tea", "--json").stdout)
    assert q["results"][0]["source"].endswith("tea.md"), q
    # nothing was embedded again: a sync finds every file as it is
    assert json.loads(cli(lake, "sync", "--json").stdout)["ingested"] == 0
    r2 = json.loads(cli(lake, "copy", "--to", str(tmp_path / "back"), "--json").stdout)
    assert r2 == r, (r, r2)
    from minirag.api import Index

    a = Index.open(root, db_path=tmp_path / "local", model_name=str(model_dir), cache_dir=model_dir.parent)
    b = Index.open(root, db_path=tmp_path / "back", model_name=str(model_dir), cache_dir=model_dir.parent)
    assert _rows(a) == _rows(b)  # vectors, postings and records, to the bit
    assert b.tables.meta()["model_id"] == a.tables.meta()["model_id"]
    a.close(), b.close()
    # a second copy into a lake that holds rows, or into a lake of another model, is refused by name
    r = cli(lake, "copy", "--from", str(tmp_path / "local"), ok=False)
    assert r.returncode == 1 and "already holds 2 sources" in r.stderr, r.stderr
    pg.lake_url = pg.new_database()
    other = lake_env(pg, tmp_path, model_dir, root, home="other")
    other["MINIRAG_DATA"] = str(tmp_path / "other-data")
    from minirag.lake import LakeStore
    from minirag.tables import check_model

    st = LakeStore(other["MINIRAG_CATALOG"], other["MINIRAG_DATA"], tmp_path / "other" / "index.duckdb")
    with st.transaction() as con:
        check_model(con, "another/model", 384)
    st.close()
    r = cli(other, "copy", "--from", str(tmp_path / "local"), ok=False)
    assert r.returncode == 1 and "built with model 'another/model'" in r.stderr, r.stderr


def test_maintain_merges_small_files(lake, root):
    for i in range(6):
        write(root, f"n{i}.md", f"# Note {i}\n\nA short note about item {i} " + "and more words " * 40 + "\n")
    for i in range(6):
        cli(lake, "ingest", str(root / f"n{i}.md"))
    r = json.loads(cli(lake, "maintain", "--json").stdout)
    assert r["backend"] == "lake" and r["after"]["data_files"] < r["before"]["data_files"], r
    q = json.loads(cli(lake, "query", "item 3", "--json").stdout)
    assert q["results"], q


def test_a_long_lived_reader_follows_another_machines_writes(lake, root, tmp_path, model_dir, shared_embedder):
    "A server on machine B sees machine A's ingest and delete on its next query, without reloading everything."
    from minirag.api import Index

    write(root, "bread.md", "# Bread\n\nKnead the dough for ten minutes and let it rise.\n")
    cli(lake, "sync")
    env = {k: lake[k] for k in ("MINIRAG_CATALOG", "MINIRAG_DATA")}
    b = Index.open(
        root,
        db_path=tmp_path / "machine-b",
        model_name=str(model_dir),
        cache_dir=model_dir.parent,
        env=env,
        embedder=shared_embedder,
        idle_close=30,
    )
    assert [h.source for h in b.query("sourdough starter feeding").hits] == [str(root / "bread.md")]
    write(root, "starter.md", "# Starter\n\nFeed the sourdough starter with flour and water every day.\n")
    cli(lake, "ingest", str(root / "starter.md"))  # machine A
    assert b.query("sourdough starter feeding").hits[0].source == str(root / "starter.md")
    cli(lake, "delete", str(root / "starter.md"))
    assert all(h.source != str(root / "starter.md") for h in b.query("sourdough starter feeding").hits)
    b.close()


def test_every_mcp_tool_on_a_lake(pg, root, model_dir, tmp_path, page_url):  # noqa: F811
    "The stdio server on a lake: every tool, with its success and failure cases, as tests/test_server.py runs them."
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters
    from test_server import SERVER_CMD, _has_sync, exercise, server_env

    env = server_env(
        root,
        model_dir,
        ALLOW_PRIVATE_URLS="1",
        MINIRAG_CATALOG=pg.new_database(),
        MINIRAG_DATA=str(tmp_path / "lake-data"),
        DB_PATH=str(tmp_path / "home"),
        PYTHONPATH=str(REPO),
    )

    async def main():
        async with Client(
            StdioServerParameters(command=SERVER_CMD, args=[], env=env), mode="auto", read_timeout_seconds=120
        ) as c:
            await exercise(c, root, page_url, _has_sync())

    anyio.run(main)


def test_a_reader_keeps_answering_after_another_machines_maintain(lake, root, tmp_path, model_dir, shared_embedder):
    "Maintenance elsewhere (inlined rows flushed, small files merged) leaves a long-lived reader's queries working."
    from minirag.api import Index

    for i in range(4):
        write(root, f"n{i}.md", f"# Note {i}\n\nA short note about sourdough item {i} " + "and more words " * 30 + "\n")
        cli(lake, "ingest", str(root / f"n{i}.md"))  # one small commit each: rows inlined in the catalog, small files
    env = {k: lake[k] for k in ("MINIRAG_CATALOG", "MINIRAG_DATA")}
    b = Index.open(
        root,
        db_path=tmp_path / "machine-b",
        model_name=str(model_dir),
        cache_dir=model_dir.parent,
        env=env,
        embedder=shared_embedder,
        idle_close=30,
    )
    assert len(b.query("sourdough item", top_k=10).hits) == 4
    assert len(b.list_files().files) == 4
    r = json.loads(cli(lake, "maintain", "--json").stdout)  # machine A
    assert r["after"]["data_files"] != r["before"]["data_files"], r  # inlined rows flushed, or files merged
    for _ in range(2):  # before the fix, every query of this reader failed from here on
        assert len(b.query("sourdough item", top_k=10).hits) == 4
        assert len(b.list_files().files) == 4
    assert b.store.reattached >= 1  # the stale connection was dropped and the lake attached afresh
    b.close()


def test_a_sync_commits_batches_not_files(lake, root, tmp_path):
    "A sync of many small files adds a handful of snapshots (its batches and its maintenance), not one per file."
    from minirag.lake import LakeStore, lake_counts

    for i in range(20):
        write(root, f"s{i}.md", f"# Small {i}\n\nA small file number {i} about batching commits.\n")
    st = LakeStore(lake["MINIRAG_CATALOG"], lake["MINIRAG_DATA"], tmp_path / "counter" / "index.duckdb")

    def snapshots():
        with st.session() as con:
            return lake_counts(con)["snapshots"]

    before = snapshots()
    assert json.loads(cli(lake, "sync", "--json").stdout)["ingested"] == 20
    added = snapshots() - before
    st.close()
    assert 1 <= added <= 6, added  # one commit a file would be 20 or more
