"""Readers follow writers on a lake: a long-lived stdio server on one 'machine' sees another machine's ingest and
delete on its next query, and reads only the rows that changed between the snapshot it holds and the current one
(its debug log names the rows read). A real PostgreSQL (tests/pg.py), a real MCP client, the CLI as the writer."""

import json, os, re, subprocess, sys
from pathlib import Path
import pytest
from conftest import need_tool, write
from pg import need_team_extra

REPO = Path(__file__).resolve().parents[1]
FOLLOWED = re.compile(r"lake snapshot (\d+) -> (\d+): read (\d+) source, (\d+) chunk and (\d+) posting rows")
TOPICS = ["bread dough", "green tea", "bicycle chain", "garden soil", "river boats", "winter coats"]


@pytest.fixture(scope="module")
def pg():
    need_tool("postgresql")
    need_team_extra()
    from pg import Postgres

    with Postgres() as server:
        yield server


def machine(pg_url, tmp_path, model_dir, root, home) -> dict:
    "One 'machine': its own home and caches; only the catalog and the data path are shared."
    return dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / home),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        MINIRAG_CATALOG=pg_url,
        MINIRAG_DATA=str(tmp_path / "lake-data"),
        PYTHONPATH=str(REPO),
    )


def cli(env, *args) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "minirag.cli", *args, "--json"], capture_output=True, text=True, timeout=300, env=env
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)


def followed(log: Path) -> list[tuple[int, ...]]:
    "The server's 'followed the lake' lines so far: (from, to, sources, chunks, postings) read."
    return [tuple(map(int, m.groups())) for m in FOLLOWED.finditer(log.read_text(errors="replace"))]


def same_rows(held: dict, read: dict):
    "The server's result (rows read back from memory) says what a one-shot query (rows read from the lake) says."
    assert held["results"][0]["source"] == read["results"][0]["source"]
    by = {(r["source"], r["chunkIndex"]): r for r in read["results"]}
    common = [r for r in held["results"] if (r["source"], r["chunkIndex"]) in by]
    assert common
    for r in common:
        o = by[(r["source"], r["chunkIndex"])]
        assert (r["text"], r["title"], r["parentId"]) == (o["text"], o["title"], o["parentId"])
    for k in set(held["parents"]) & set(read["parents"]):
        assert held["parents"][k] == read["parents"][k]
    src = {s["source"]: s for s in read["sources"]}
    for s in held["sources"]:
        if s["source"] in src:
            assert (s["title"], s["displayPath"]) == (src[s["source"]]["title"], src[s["source"]]["displayPath"])


def test_a_server_follows_another_machines_writes(pg, tmp_path, model_dir, root):
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    url = pg.new_database()
    writer = machine(url, tmp_path, model_dir, root, "machine-a")
    for i, t in enumerate(TOPICS):  # several documents, so one file's rows are a small part of the index
        paras = "\n\n".join(f"Paragraph {j} about {t}: notes on {t} number {j}, kept for the team." for j in range(8))
        write(root, f"doc{i}.md", f"# {t.title()}\n\n{paras}\n")
    assert cli(writer, "sync")["ingested"] == len(TOPICS)
    total = cli(writer, "status")["chunkCount"]
    reader = machine(url, tmp_path, model_dir, root, "machine-b")
    log = tmp_path / "server.log"
    reader_cli = machine(url, tmp_path, model_dir, root, "machine-c")  # one-shot: reads everything back from the lake
    reader.update(MINIRAG_DEBUG="1")
    cmd = f"exec {sys.executable} -m minirag.cli serve 2>>{log}"

    async def query(c, q: str) -> list[str]:
        r = await c.call_tool("query_documents", {"query": q, "topK": 5})
        assert not r.is_error, r.content[0].text
        same_rows(r.structured_content, cli(reader_cli, "query", q, "--top-k", "5"))
        return [s["source"] for s in r.structured_content["sources"]]

    async def main():
        async with Client(
            StdioServerParameters(command="sh", args=["-c", cmd], env=reader), mode="auto", read_timeout_seconds=120
        ) as c:
            assert (await query(c, "kneading bread dough"))[0].endswith("doc0.md")
            await query(c, "green tea")
            assert followed(log) == []  # nothing committed: nothing read

            # machine A ingests a new file: the server's next query finds it, having read only that file's rows
            lemon = write(root, "lemon.md", "# Lemon curd\n\nWhisk zesty lemon curd with butter and sugar.\n")
            assert cli(writer, "ingest", str(lemon))["ingested"] == 1
            n = cli(writer, "status")["chunkCount"] - total
            assert (await query(c, "zesty lemon curd"))[0] == str(lemon)
            (snap0, snap1, srcs, chunks, posts), *more = followed(log)
            assert more == [] and snap1 > snap0, followed(log)
            assert (srcs, chunks) == (1, n) and 0 < posts < 100, followed(log)
            assert chunks < total

            # machine A deletes a file: gone from the next query, and only its rows were read
            cli(writer, "delete", str(root / "doc0.md"))
            assert not any(s.endswith("doc0.md") for s in await query(c, "kneading bread dough"))
            last = followed(log)[-1]
            assert last[0] == snap1 and last[2] == 1 and 0 < last[3] <= total // len(TOPICS) + 1, followed(log)
            assert last[4] == 0  # a delete brings no postings
            assert "full reload" not in log.read_text(errors="replace")

    anyio.run(main)
