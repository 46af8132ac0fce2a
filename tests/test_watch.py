"""A watching server (`MINIRAG_WATCH=1` over stdio, `serve --http --watch`): new, changed, moved and deleted files
reach the index without a sync call, a burst is one batched sync, queries answer throughout, status tells."""

import os, sys, time
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from conftest import write

SERVER_CMD = str(Path(sys.executable).parent / "minirag-mcp")


def ok(r) -> dict:
    assert not r.is_error, r.content[0].text
    return r.structured_content


async def until(check, what: str, timeout: float = 60.0) -> float:
    "Seconds until `await check()` is true (fails after `timeout`)."
    t0 = time.perf_counter()
    while not await check():
        assert time.perf_counter() - t0 < timeout, f"{what}: not within {timeout} s"
        await anyio.sleep(0.1)
    return time.perf_counter() - t0


def test_the_index_follows_the_folder(root, model_dir):
    write(root, "ops/runbook.md", "# Runbook\n\nRestart the queue with `svc q restart`.\n")
    env = {
        **os.environ,
        "BASE_DIR": str(root),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
        "MINIRAG_WATCH": "1",
    }
    params = StdioServerParameters(command=SERVER_CMD, args=[], env=env)

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:

            async def sources(query):
                r = ok(await c.call_tool("query_documents", {"query": query, "topK": 5, "scope": str(root)}))
                return {h["source"] for h in r["results"] if query.split()[-1] in h["text"]}

            async def settled():
                st = ok(await c.call_tool("status", {}))
                return st["watching"] and st["pendingChanges"] == 0 and st["lastCaughtUp"] is not None

            await until(settled, "the first catch-up (the file already there)")
            assert ok(await c.call_tool("status", {}))["sourceCount"] == 1
            f = write(root, "notes/new.md", "# New\n\nThe code word is ZEBRA-4471.\n")
            took = await until(lambda: _has(sources, "code word ZEBRA-4471", f), "a new file searchable")
            print(f"\nnew file searchable after {took:.2f} s")
            f.write_text("# New\n\nThe code word is now OKAPI-9902.\n")
            took = await until(lambda: _has(sources, "code word OKAPI-9902", f), "an edit searchable")
            print(f"edit searchable after {took:.2f} s")
            assert not await sources("code word ZEBRA-4471")
            moved = root / "archive" / "new.md"
            moved.parent.mkdir()
            f.rename(moved)
            await until(lambda: _has(sources, "code word OKAPI-9902", moved), "a moved file found at its new path")
            st = ok(await c.call_tool("status", {}))
            syncs_before = st["sourceCount"]
            for i in range(300):  # a burst: one batch, while queries keep answering
                write(root, f"burst/n{i:03}.md", f"# Burst {i}\n\nItem BURST-{i:03} of the unzip.\n")
            answered = 0

            async def all_in():
                nonlocal answered
                await sources("queue restart")
                answered += 1
                files = ok(await c.call_tool("list_files", {"scope": str(root / "burst")}))["files"]
                return len(files) == 300 and all(x["state"] == "indexed" for x in files) and await settled()

            took = await until(all_in, "a 300-file burst indexed", timeout=240)
            print(f"300-file burst indexed after {took:.2f} s, {answered} queries answered meanwhile")
            assert ok(await c.call_tool("status", {}))["sourceCount"] == syncs_before + 300
            moved.unlink()

            async def gone():
                return str(moved) not in {
                    x["filePath"] for x in ok(await c.call_tool("list_files", {}))["files"]
                } and not await sources("code word OKAPI-9902")

            await until(gone, "a deleted file pruned")

    anyio.run(main)


async def _has(sources, query, path) -> bool:
    return str(path) in await sources(query)
