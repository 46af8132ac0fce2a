"""A write never stops readers: a real `minirag-mcp serve --http` on loopback answers queries while a long
`ingest_data` converts and embeds on another session, and the write lands once, whole."""

import os, random, time
from pathlib import Path

import anyio
import duckdb

from conftest import write
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from test_http import Served, cli, free_port

SECTIONS = 30  # about 70 chunks: seconds of embedding on any machine, while a query takes milliseconds
WORDS = "pump valve oil pressure budget warehouse order invoice release backup schedule server network".split()


def long_note(seed: int = 1) -> str:
    rnd = random.Random(seed)
    parts = [
        f"## Part {i}\n\n" + " ".join(rnd.choice(WORDS) + str(rnd.randint(0, 999)) for _ in range(60)) + ".\n"
        for i in range(SECTIONS)
    ]
    return "# Long note\n\nThe marker QX-4471 names this note.\n\n" + "\n".join(parts)


def client(served) -> Client:
    "A session with no token (loopback, no tokens made) that waits as long as a loaded machine needs."
    return Client(streamable_http_client(served.url), read_timeout_seconds=900)


def test_queries_answer_while_a_long_ingest_data_runs(tmp_path, model_dir):
    base = Path(os.path.realpath(tmp_path))
    docs = base / "docs"
    write(docs, "alpha.md", "# Alpha pumps\n\nThe alpha pump needs oil every 200 hours; see manual AP-100.\n")
    env = {
        **os.environ,
        "BASE_DIR": str(docs),
        "DB_PATH": str(base / "index"),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
    }
    cli(env, "ingest", str(docs), "-q")
    served = Served(env, free_port(), {})
    try:
        ingest, answers = {}, []

        async def writer():
            async with client(served) as c:
                t0 = time.perf_counter()
                r = await c.call_tool("ingest_data", {"content": long_note(), "source": "notes/long"})
                ingest.update(r.structured_content or {"error": r.content[0].text}, took=time.perf_counter() - t0)

        async def reader(started: anyio.Event):
            async with client(served) as c:
                await c.call_tool("query_documents", {"query": "alpha pump oil"})  # warm: model and vectors loaded
                started.set()
                while "took" not in ingest:
                    t0 = time.perf_counter()
                    r = await c.call_tool("query_documents", {"query": "alpha pump oil", "topK": 3})
                    assert not r.is_error, r.content[0].text
                    assert r.structured_content["results"][0]["source"].endswith("alpha.md")
                    answers.append((time.perf_counter() - t0, "took" in ingest))

        async def main():
            started = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader, started)
                await started.wait()
                tg.start_soon(writer)

        anyio.run(main)
        during = [t for t, after in answers if not after]
        assert "error" not in ingest, ingest
        # the old server answered none of them until the ingest was written: every query waited for the whole call
        assert len(during) >= 3, (ingest, answers)
        assert max(during) < ingest["took"] / 2, (ingest, answers)

        async def found():
            async with client(served) as c:
                r = await c.call_tool("query_documents", {"query": "QX-4471", "topK": 1})
                return r.structured_content["results"][0]

        assert anyio.run(found)["source"] == "notes/long"
    finally:
        served.stop()
    con = duckdb.connect(str(base / "index" / "index.duckdb"), read_only=True)
    rows, distinct = con.execute(
        "SELECT count(*), count(DISTINCT chunk_index) FROM chunks WHERE source = 'notes/long'"
    ).fetchone()
    sources = con.execute("SELECT count(*) FROM sources WHERE source = 'notes/long'").fetchone()[0]
    con.close()
    assert (rows, distinct, sources) == (ingest["chunkCount"], ingest["chunkCount"], 1)
