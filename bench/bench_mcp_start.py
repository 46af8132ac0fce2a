"""Start of `minirag-mcp`: launch → tools/list (target ≤ 1 s: no model load at start), then the first query.

Launches the console script as a client would, sends the handshake (classic `initialize` or the 2026-07-28
`server/discover`) and `tools/list`, and times launch → tools/list response. Runs each era N times; prints min /
median / max wall time and the server's CPU time (user + sys, whole process life), which a busy machine does not
inflate.

Then, over an index (the bundled sample documents ingested with the packaged model, or `--base-dir`/`--db-path` of an
existing one), it times `query_documents` in fresh servers: the first query sent right after tools/list (it meets
the background warm-up while it runs), the first query sent `--wait` seconds after tools/list (after the warm-up), the
first query sent `--wait` seconds after the handshake by a client that never lists the tools, and a warm query (the
next one in the same server). Medians over N runs; the machine is shared, so compare medians.

    python bench/bench_mcp_start.py [N] [--wait 5] [--base-dir DIR --db-path DIR] [--skip-start]
"""

import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

CMD = str(Path(sys.executable).parent / "minirag-mcp")
K = "io.modelcontextprotocol/"
META = {
    "_meta": {
        K + "protocolVersion": "2026-07-28",
        K + "clientInfo": {"name": "bench", "version": "0"},
        K + "clientCapabilities": {},
    }
}
QUERIES = ["What does ERR_CONNECTION_REFUSED mean?", "how long are backups kept", "release notes export timeout"]


def frames(modern: bool) -> list[dict]:
    if modern:
        return [
            {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": META},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": META},
        ]
    return [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]


def _answer(p, want_id: int) -> dict:
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("server exited before answering")
        msg = json.loads(line)
        if msg.get("id") == want_id:
            return msg


def once(modern: bool, env: dict) -> tuple[float, float]:
    "(wall seconds launch → tools/list, CPU seconds the whole server process used)"
    t0 = time.perf_counter()
    p = subprocess.Popen([CMD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    p.stdin.write("".join(json.dumps(f) + "\n" for f in frames(modern)).encode())
    p.stdin.flush()
    msg = _answer(p, 1)
    dt = time.perf_counter() - t0
    assert len(msg["result"]["tools"]) == 11
    p.stdin.close()
    _, _, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    return dt, ru.ru_utime + ru.ru_stime


def query_run(env: dict, wait: float, i: int, paused: bool = False, listed: bool = True) -> dict:
    """One fresh server: the handshake and tools/list (only the handshake if not `listed`), optional wait, two queries
    (if `paused`, one more after a `wait`); seconds each."""
    t0 = time.perf_counter()
    p = subprocess.Popen([CMD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def call(rid, name, args):
        p.stdin.write(
            (
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "tools/call",
                        "params": {"name": name, "arguments": args, **META},
                    }
                )
                + "\n"
            ).encode()
        )
        p.stdin.flush()
        t = time.perf_counter()
        msg = _answer(p, rid)
        dt = time.perf_counter() - t
        assert not msg["result"].get("isError"), msg
        return dt

    p.stdin.write("".join(json.dumps(f) + "\n" for f in frames(True)[: None if listed else 1]).encode())
    p.stdin.flush()
    _answer(p, 1 if listed else 0)
    listed = time.perf_counter() - t0
    if wait:
        time.sleep(wait)
    first = call(2, "query_documents", {"query": QUERIES[i % len(QUERIES)], "topK": 8})
    warm = call(3, "query_documents", {"query": QUERIES[(i + 1) % len(QUERIES)], "topK": 8})
    out = dict(listed=listed, first=first, warm=warm)
    # the same pause in a server that has answered queries (it keeps the idle index open MINIRAG_IDLE_CLOSE s, 30 by
    # default)
    if paused:
        time.sleep(wait)
        out["paused"] = call(4, "query_documents", {"query": QUERIES[(i + 2) % len(QUERIES)], "topK": 8})
    p.stdin.close()
    p.wait(timeout=60)
    return out


def interpreter_start() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def ms(xs) -> str:
    return f"median {statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"


def sample_index(tmp: Path) -> dict:
    "The bundled sample documents ingested with the packaged model; the environment a server needs for them."
    from minirag.embed import packaged_model_dir
    from minirag.cli import sample_docs_dir

    docs = tmp / "docs"
    shutil.copytree(sample_docs_dir(), docs)
    model = packaged_model_dir(tmp / "models")
    env = {
        **os.environ,
        "BASE_DIR": str(docs),
        "MODEL_NAME": str(model),
        "CACHE_DIR": str(tmp / "models"),
        "DB_PATH": str(tmp / "db"),
    }
    subprocess.run([CMD, "ingest", str(docs), "--json"], env=env, check=True, capture_output=True)
    return env


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=7, help="runs per measurement (default 7)")
    ap.add_argument(
        "--wait", type=float, default=5.0, help="seconds between tools/list and the 'after warm-up' first query"
    )
    ap.add_argument(
        "--base-dir", help="document root of an existing index (default: the bundled samples, ingested now)"
    )
    ap.add_argument("--db-path", help="index directory of that index")
    ap.add_argument("--model-name", help="model of that index (default: the packaged test model)")
    ap.add_argument("--skip-start", action="store_true", help="only the query measurements")
    a = ap.parse_args()
    n = a.n
    tmp = Path(tempfile.mkdtemp(prefix="minirag-bench-"))
    try:
        if not a.skip_start:
            env = {**os.environ, "BASE_DIR": str(tmp)}
            once(False, env)  # warm the OS file cache once, as any second launch of a client would
            base = statistics.median(interpreter_start() for _ in range(3))
            print(f"python interpreter start alone: {base * 1000:.0f} ms")
            for modern, label in ((False, "classic initialize"), (True, "2026-07-28 discover")):
                runs = [once(modern, env) for _ in range(n)]
                ts, cpu = [r[0] for r in runs], [r[1] for r in runs]
                print(
                    f"{label:>20}: launch → tools/list  min {min(ts) * 1000:.0f} ms  "
                    f"median {statistics.median(ts) * 1000:.0f} ms  max {max(ts) * 1000:.0f} ms  "
                    f"(n={n}, target ≤ 1000 ms); server CPU median {statistics.median(cpu) * 1000:.0f} ms"
                )
        if a.base_dir:
            from minirag.embed import packaged_model_dir

            env = {
                **os.environ,
                "BASE_DIR": a.base_dir,
                **({"DB_PATH": a.db_path} if a.db_path else {}),
                "MODEL_NAME": a.model_name or str(packaged_model_dir(tmp / "models")),
                "CACHE_DIR": str(tmp / "models"),
            }
        else:
            env = sample_index(tmp)
        query_run(env, 0, 0)  # OS file cache
        now = [query_run(env, 0, i) for i in range(n)]
        later = [query_run(env, a.wait, i, paused=True) for i in range(n)]
        print(
            f"first query right after tools/list: {ms([r['first'] for r in now])}  "
            f"(launch → tools/list {ms([r['listed'] for r in now])})"
        )
        print(f"first query {a.wait:g} s after tools/list: {ms([r['first'] for r in later])}")
        unlisted = [query_run(env, a.wait, i, listed=False) for i in range(n)]
        print(f"first query {a.wait:g} s after the handshake, tools never listed: {ms([r['first'] for r in unlisted])}")
        warm = [r["warm"] for r in now + later]
        print(f"warm query (the next one):          {ms(warm)}")
        print(
            f"a query {a.wait:g} s after the previous one:  {ms([r['paused'] for r in later])}  "
            f"(the server keeps the idle index open {os.environ.get('MINIRAG_IDLE_CLOSE', '30')} s)"
        )
        first_later = statistics.median([r["first"] for r in later])
        print(
            f"first-after-wait / warm = {first_later / statistics.median(warm):.2f} (target ≤ 1.5); never listed / "
            f"warm = {statistics.median([r['first'] for r in unlisted]) / statistics.median(warm):.2f}; "
            f"first-after-wait / same pause later = {first_later / statistics.median([r['paused'] for r in later]):.2f}"
        )
        print(
            f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
            "(wall times stretch under load; CPU time does not)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
