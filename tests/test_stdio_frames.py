"""A frame over the stdio limit is answered with an error under its id and skipped unread into memory: the server,
a real `minirag-mcp` subprocess spoken to in raw JSON-RPC lines, stays small and answers the next request."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

CLI = str(Path(sys.executable).parent / "minirag-mcp")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_an_oversized_stdio_frame_is_refused_before_it_is_read(tmp_path, model_dir):
    root = tmp_path / "docs"
    root.mkdir()
    env = dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        MAX_FILE_SIZE="1000000",
        MINIRAG_WARM_UP="0",  # the warm-up starts after the handshake and loads the model: not what is measured here
    )
    p = subprocess.Popen([CLI], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(obj_or_bytes):
        data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
        p.stdin.write(data + b"\n")
        p.stdin.flush()

    def answer() -> dict:
        return json.loads(p.stdout.readline())

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert answer()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        start_rss = peak_rss_mb(p.pid)
        big = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "ingest_data", "arguments": {"content": "z" * 150_000_000}},
        }
        writer = threading.Thread(target=send, args=(json.dumps(big).encode(),))
        writer.start()
        refused = answer()
        writer.join(timeout=120)
        assert refused["id"] == 5 and "frame limit" in refused["error"]["message"], refused
        send({"jsonrpc": "2.0", "id": 6, "method": "tools/list"})
        listed = answer()
        assert listed["id"] == 6 and len(listed["result"]["tools"]) == 11
        grew = peak_rss_mb(p.pid) - start_rss
        assert grew < 100, f"the server grew by {grew:.0f} MB reading a 150 MB frame"
    finally:
        p.kill()
        p.wait(timeout=30)
