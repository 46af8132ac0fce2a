"""A URL whose server drips its body is given up within seconds, through the installed CLI: before, a byte every few
seconds kept `ingest-url` (and, in the server, every caller waiting on it) busy for as long as the server liked."""

import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

CLI = str(Path(sys.executable).parent / "minirag-mcp")


class Drip(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        try:
            for _ in range(120):  # a byte every half second: a minute in all
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.5)
        except OSError:
            pass  # the client gave up: what the test wants


def test_a_dripping_url_is_given_up_with_the_reason(tmp_path, model_dir):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    root = tmp_path / "docs"
    root.mkdir()
    env = dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        ALLOW_PRIVATE_URLS="1",
    )
    try:
        t = time.monotonic()
        r = subprocess.run(
            [CLI, "ingest-url", f"http://127.0.0.1:{srv.server_address[1]}/page"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        took = time.monotonic() - t
    finally:
        srv.shutdown()
        srv.server_close()
    assert r.returncode != 0 and "slower than 1,024 bytes a second" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert took < 40, f"{took:.0f} s: the dripping body was waited for"
