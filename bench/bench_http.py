"""Load on `minirag-mcp serve --http`: concurrent clients send queries while another client ingests and deletes.

Run: `python bench/bench_http.py` (defaults: 50 clients, 2,000 queries). Each query client is its own SDK
Streamable HTTP session with a read token; the writer (a write token) ingests data items and a file and deletes
every other one, for as long as the queries run. Prints errors (must be 0), query latency p50/p95/max, the
writer's operations, the server's resident memory (after warm-up, peak, at the end), and checks the index
afterwards: every item the writer kept is there once, every item it deleted is gone, no chunk is duplicated.

`--scenario ingest` (one `ingest_data` of `--ingest-kb`, 3,900 kB by default: the request stays under the server's
4 MiB body limit) or `--scenario sync` (a sync of `--sync-files` new files, 300 by default) measures instead what one
long write costs the readers: the clients first send `--queries` queries with no writer (idle, the first round of each
client not counted), then query for as long
as the write runs; it prints both p95s and their ratio (the goal: within 3×).
"""

import argparse, json, os, shutil, socket, statistics, subprocess, sys, tempfile, threading, time
from pathlib import Path

import anyio
import duckdb
import httpx
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from minirag.embed import packaged_model_dir

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).parent / "minirag-mcp")
QUERIES = [
    "how do I reset a password?",
    "ERR_CONNECTION_REFUSED",
    "warehouse stock levels",
    "release notes",
    "backup schedule",
    "pump maintenance interval",
    "who approves a purchase order?",
    "SPEC-112",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def corpus(docs: Path, n: int):
    "The bundled samples plus `n` generated notes, so a query has a few hundred chunks to rank."
    shutil.copytree(ROOT / "minirag" / "sample_docs", docs)
    for i in range(n):
        (docs / f"notes/note-{i:04}.md").parent.mkdir(exist_ok=True)
        (docs / f"notes/note-{i:04}.md").write_text(
            f"# Note {i}\n\n## Pumps\n\nPump P-{i} needs maintenance every {100 + i} hours; "
            f"order part K-{i * 7} from the warehouse.\n\n## Budget\n\nThe budget line B-{i} covers {i * 13} euros.\n"
        )


def long_note(kb: int) -> str:
    "About `kb` kB of Markdown: sections of words the corpus does not hold, so every chunk is embedded."
    words = "turbine gasket ledger voucher sprocket quarry lantern harbour meadow orchard".split()
    parts, i = ["# Long note\n"], 0
    while sum(map(len, parts)) < kb * 1024:
        parts.append(f"## Part {i}\n\n" + " ".join(f"{words[(i * 7 + j) % 10]}{i * 31 + j}" for j in range(80)))
        i += 1
    return "\n\n".join(parts)


def p95(xs) -> float:
    ms = sorted(x * 1000 for x in xs)
    return round(ms[int(0.95 * (len(ms) - 1))], 1) if ms else float("nan")


async def querying(client, clients: int, until, lat: list, errors: list, warm: bool = False):
    "`clients` reader sessions, each querying until `until()` is true (if `warm`, each one's first answer not timed)."

    async def one(k):
        async with client("reader") as c:
            i = 0
            while not until():
                t0 = time.perf_counter()
                try:
                    r = await c.call_tool("query_documents", {"query": QUERIES[(k + i) % len(QUERIES)], "topK": 5})
                    if r.is_error:
                        errors.append(r.content[0].text)
                except Exception as e:
                    errors.append(f"{type(e).__name__}: {e}")
                if i or not warm:
                    lat.append(time.perf_counter() - t0)
                i += 1

    async with anyio.create_task_group() as tg:
        for k in range(clients):
            tg.start_soon(one, k)


async def during_write(a, client, docs: Path, lat: list, errors: list, kept: set) -> dict:
    "Idle p95, then p95 while one long write runs (an `ingest_data` or a sync of new files); `lat` gets the latter."
    idle, state = [], {}
    await querying(client, a.clients, lambda: len(idle) >= a.queries, idle, errors, warm=True)

    async def write():
        async with client("writer", wait=3600) as c:  # a 4 MB ingest on a busy machine takes minutes
            t0 = time.perf_counter()
            if a.scenario == "ingest":
                r = await c.call_tool("ingest_data", {"content": long_note(a.ingest_kb), "source": "load/long"})
                kept.add("load/long")
            else:
                for i in range(a.sync_files):
                    (docs / "batch" / f"file-{i:04}.md").parent.mkdir(exist_ok=True)
                    (docs / "batch" / f"file-{i:04}.md").write_text(long_note(2).replace("Long note", f"File {i}"))
                r = await c.call_tool("sync_start", {})
                while not r.is_error and r.structured_content.get("state", "running") == "running":
                    await anyio.sleep(0.5)
                    r = await c.call_tool("sync_status", {"jobId": r.structured_content["jobId"]})
            if r.is_error:
                errors.append(f"{a.scenario}: " + r.content[0].text)
            state["write_s"] = round(time.perf_counter() - t0, 1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        await querying(client, a.clients, lambda: "write_s" in state, lat, errors)
    return dict(idle_p95_ms=p95(idle), during_p95_ms=p95(lat), p95_ratio=round(p95(lat) / p95(idle), 2), **state)


async def main(a):
    tmp = Path(tempfile.mkdtemp(prefix="minirag-bench-http-"))
    docs, db = tmp / "docs", tmp / "index"
    corpus(docs, a.notes)
    model = packaged_model_dir(tmp / "cache")
    env = {
        **os.environ,
        "BASE_DIR": str(docs),
        "DB_PATH": str(db),
        "MODEL_NAME": str(model),
        "CACHE_DIR": str(model.parent),
    }
    subprocess.run([CLI, "ingest", str(docs), "-q"], env=env, check=True)
    tok = {
        n: subprocess.run(
            [CLI, "token", "add", n, "--rights", r, "-q"], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        for n, r in (("reader", "read"), ("writer", "write"))
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    srv = subprocess.Popen([CLI, "serve", "--http", f"127.0.0.1:{port}"], env=env, stderr=subprocess.DEVNULL)
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    mem, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            mem.append((time.perf_counter(), rss_mb(srv.pid)))
            time.sleep(0.25)

    threading.Thread(target=sample, daemon=True).start()

    def client(name, wait: float = 300):
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {tok[name]}"})
        return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=wait)

    lat, errors, left = [], [], [a.queries]
    warm = {}

    async def query_client(k):
        async with client("reader") as c:
            while left[0] > 0:
                left[0] -= 1
                q = QUERIES[(k + left[0]) % len(QUERIES)]
                t0 = time.perf_counter()
                try:
                    r = await c.call_tool("query_documents", {"query": q, "topK": 5})
                    if r.is_error:
                        errors.append(r.content[0].text)
                except Exception as e:
                    errors.append(f"{type(e).__name__}: {e}")
                lat.append(time.perf_counter() - t0)
                if len(lat) == 100:
                    warm["t"] = time.perf_counter()

    kept, deleted, writes = set(), set(), [0]

    async def writer():
        async with client("writer") as c:
            i = 0
            while left[0] > 0:
                src = f"load/item-{i:05}"
                r = await c.call_tool(
                    "ingest_data", {"content": f"# Load item {i}\n\nToken LD-{i} for the bench.", "source": src}
                )
                if r.is_error:
                    errors.append("ingest_data: " + r.content[0].text)
                else:
                    kept.add(src)
                if i % 2:
                    prev = f"load/item-{i - 1:05}"
                    r = await c.call_tool("delete_file", {"source": prev})
                    if r.is_error:
                        errors.append("delete_file: " + r.content[0].text)
                    else:
                        kept.discard(prev)
                        deleted.add(prev)
                f = docs / "live" / f"live-{i % 3}.md"
                f.parent.mkdir(exist_ok=True)
                f.write_text(f"# Live {i}\n\nRevision {i} of a file that keeps changing.\n")
                r = await c.call_tool("ingest_file", {"filePath": str(f)})
                if r.is_error:
                    errors.append("ingest_file: " + r.content[0].text)
                writes[0] += 3 if i % 2 else 2
                i += 1

    t0, extra = time.perf_counter(), {}
    if a.scenario == "mixed":
        async with anyio.create_task_group() as tg:
            for k in range(a.clients):
                tg.start_soon(query_client, k)
            tg.start_soon(writer)
    else:
        extra = await during_write(a, client, docs, lat, errors, kept)
    wall = time.perf_counter() - t0
    stop.set()
    async with client("writer") as c:
        listed = (await c.call_tool("list_files", {})).structured_content
        status = (await c.call_tool("status", {})).structured_content
    srv.terminate()
    srv.wait(timeout=30)

    have = {s["source"] for s in listed["sources"]}
    files = [f for f in listed["files"] if f["state"] == "indexed"]
    con = duckdb.connect(str(db / "index.duckdb"), read_only=True)
    dup_sources = con.execute(
        "SELECT count(*) FROM (SELECT source FROM sources GROUP BY source HAVING count(*) > 1)"
    ).fetchone()[0]
    dup_chunks = con.execute(
        "SELECT count(*) FROM (SELECT source, chunk_index FROM chunks GROUP BY ALL HAVING count(*) > 1)"
    ).fetchone()[0]
    orphans = con.execute("SELECT count(*) FROM chunks WHERE source NOT IN (SELECT source FROM sources)").fetchone()[0]
    con.close()
    after_warm = [m for t, m in mem if t >= warm.get("t", 0)] or [m for _, m in mem]
    ms = sorted(x * 1000 for x in lat)
    out = dict(
        clients=a.clients,
        queries=len(lat),
        errors=len(errors),
        wall_s=round(wall, 1),
        qps=round(len(lat) / wall, 1),
        p50_ms=round(statistics.median(ms), 1),
        p95_ms=round(ms[int(0.95 * (len(ms) - 1))], 1),
        max_ms=round(ms[-1], 1),
        writer_ops=writes[0],
        kept=len(kept),
        deleted=len(deleted),
        lost=len(kept - have),
        resurrected=len(deleted & have),
        duplicate_sources=dup_sources,
        duplicate_chunks=dup_chunks,
        orphan_chunks=orphans,
        source_count=status["sourceCount"],
        expected_sources=len(files) + len(kept),
        rss_mb_after_warmup=round(after_warm[0], 1),
        rss_mb_peak=round(max(after_warm), 1),
        rss_mb_end=round(after_warm[-1], 1),
        **extra,
    )
    print(json.dumps(out, indent=2))
    for e in errors[:5]:
        print("error:", e)
    shutil.rmtree(tmp, ignore_errors=True)
    ok = not errors and out["lost"] == out["resurrected"] == dup_sources == dup_chunks == orphans == 0
    ok = ok and out["source_count"] == out["expected_sources"]
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--notes", type=int, default=200, help="generated notes next to the samples")
    ap.add_argument("--scenario", choices=["mixed", "ingest", "sync"], default="mixed", help="see above")
    ap.add_argument("--ingest-kb", type=int, default=3900, help="size of the long ingest_data (--scenario ingest)")
    ap.add_argument("--sync-files", type=int, default=300, help="new files the sync reads (--scenario sync)")
    sys.exit(anyio.run(main, ap.parse_args()))
