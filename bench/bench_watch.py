"""A watching server against `sync`: how soon a saved edit is searchable, and what a 2,000-file burst costs.

Run: `python bench/bench_watch.py [--files 2000]`. (1) `minirag-mcp sync` of N new files, timed, as the yardstick.
(2) A server with MINIRAG_WATCH=1 over an empty folder: N files appear at once (an unzip); the time until the index
holds all of them and the watcher has settled, against (1). (3) One file is edited; the time until the new text is
searchable (the sample documents are the rest of the index).
"""

import argparse, json, os, shutil, subprocess, sys, tempfile, time
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from minirag.embed import packaged_model_dir

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).parent / "minirag-mcp")


def burst(folder: Path, n: int):
    for i in range(n):
        p = folder / f"unzipped/d{i // 100:02}/n{i:05}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# Note {i}\n\nPart P-{i} is stored in bay {i % 40}; reorder at {i % 17} units.\n")


async def watched(a, tmp: Path, model: Path) -> dict:
    docs = tmp / "watched"
    shutil.copytree(ROOT / "minirag" / "sample_docs", docs)
    env = {
        **os.environ,
        "BASE_DIR": str(docs),
        "MODEL_NAME": str(model),
        "CACHE_DIR": str(model.parent),
        "MINIRAG_WATCH": "1",
    }
    out = {}
    async with Client(StdioServerParameters(command=CLI, args=[], env=env), read_timeout_seconds=600) as c:

        async def status():
            return (await c.call_tool("status", {})).structured_content

        async def settle(n):
            while True:
                s = await status()
                if s.get("lastCaughtUp") and s["pendingChanges"] == 0 and s.get("sourceCount") == n:
                    return
                await anyio.sleep(0.1)

        n0 = len(list(docs.iterdir()))
        await settle(n0)
        t0 = time.perf_counter()
        burst(docs, a.files)
        await settle(n0 + a.files)
        out["burst_s"] = round(time.perf_counter() - t0, 2)
        edits = []
        for k in range(3):
            f = docs / "unzipped/d00/n00000.md"
            f.write_text(f"# Note 0\n\nThe part moved to bay QX-{k}77.\n")
            t0 = time.perf_counter()
            while True:
                r = (await c.call_tool("query_documents", {"query": f"bay QX-{k}77", "topK": 3})).structured_content
                if any(f"QX-{k}77" in h["text"] for h in r["results"]):
                    break
                await anyio.sleep(0.05)
            edits.append(round(time.perf_counter() - t0, 2))
        out["edit_searchable_s"] = edits
    return out


def main(a):
    tmp = Path(tempfile.mkdtemp(prefix="minirag-bench-watch-"))
    model = packaged_model_dir(tmp / "cache")
    plain = tmp / "plain"
    shutil.copytree(ROOT / "minirag" / "sample_docs", plain)
    env = {**os.environ, "BASE_DIR": str(plain), "MODEL_NAME": str(model), "CACHE_DIR": str(model.parent)}
    subprocess.run([CLI, "sync", "-q"], env=env, check=True, capture_output=True)
    burst(plain, a.files)
    t0 = time.perf_counter()
    subprocess.run([CLI, "sync", "-q"], env=env, check=True, capture_output=True)
    res = {"files": a.files, "sync_s": round(time.perf_counter() - t0, 2)}
    res |= anyio.run(watched, a, tmp, model)
    print(json.dumps(res, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    main(ap.parse_args())
