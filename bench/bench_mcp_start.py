"""Cold start of `minirag-mcp` to an answered tools/list (target ≤ 1 s, SPEC §11, R-P1).

Launches the console script as a client would, sends the handshake (classic
`initialize` or the 2026-07-28 `server/discover`) and `tools/list`, and times
launch → tools/list response. Runs each era N times; prints min / median / max wall time and the server's
CPU time (user + sys, whole process life), which a busy machine does not inflate.

    python bench/bench_mcp_start.py [N]
"""
import json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

CMD = str(Path(sys.executable).parent/"minirag-mcp")
K = "io.modelcontextprotocol/"
META = {"_meta": {K + "protocolVersion": "2026-07-28", K + "clientInfo": {"name": "bench", "version": "0"}, K + "clientCapabilities": {}}}

def frames(modern: bool) -> list[dict]:
    if modern: return [{"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": META},
                       {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": META}]
    return [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]

def once(modern: bool, env: dict) -> tuple[float, float]:
    "(wall seconds launch → tools/list, CPU seconds the whole server process used)"
    t0 = time.perf_counter()
    p = subprocess.Popen([CMD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    p.stdin.write("".join(json.dumps(f) + "\n" for f in frames(modern)).encode()); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line: raise SystemExit("server exited before answering tools/list")
        msg = json.loads(line)
        if msg.get("id") == 1: dt = time.perf_counter() - t0; break
    assert len(msg["result"]["tools"]) == 11
    p.stdin.close()
    _, _, ru = os.wait4(p.pid, 0); p.returncode = 0
    return dt, ru.ru_utime + ru.ru_stime

def interpreter_start() -> float:
    t0 = time.perf_counter(); subprocess.run([sys.executable, "-c", "pass"], check=True); return time.perf_counter() - t0

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    docs = tempfile.mkdtemp(prefix="minirag-bench-")
    env = {**os.environ, "BASE_DIR": docs}
    once(False, env)   # warm the OS file cache once, as any second launch of a client would
    base = statistics.median(interpreter_start() for _ in range(3))
    print(f"python interpreter start alone: {base * 1000:.0f} ms")
    for modern, label in ((False, "classic initialize"), (True, "2026-07-28 discover")):
        runs = [once(modern, env) for _ in range(n)]
        ts, cpu = [r[0] for r in runs], [r[1] for r in runs]
        print(f"{label:>20}: launch → tools/list  min {min(ts) * 1000:.0f} ms  median {statistics.median(ts) * 1000:.0f} ms  "
              f"max {max(ts) * 1000:.0f} ms  (n={n}, target ≤ 1000 ms); server CPU median {statistics.median(cpu) * 1000:.0f} ms")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times stretch under load; CPU time does not)")
