"""The first query of a fresh process (issue 18): `AttributeError: 'userbase'`.

Python 3.11's `sysconfig.get_config_vars()` builds its dict lazily and not thread-safely: between `_CONFIG_VARS = {}`
and `_CONFIG_VARS['userbase'] = ...` it imports `_sysconfigdata…`, and another thread formatting `{userbase}` (importing
`loguru`, fastembed's logger, does 35 `sysconfig.get_paths()`) fails. A fresh one-shot query used to load the model in
its embedding thread while the main thread imported pandas (DuckDB's `register`), which fills that dict. On an idle
machine the window is a few milliseconds; these tests widen it deterministically by making the dict's initialisation
slow (as a CPU-starved machine does), so the interleaving that was seen once in 32 runs happens every time.
"""

import json, os, subprocess, sys
from pathlib import Path


from conftest import write

# run before minirag is imported: the first fill of sysconfig's dict takes 0.5 s, whichever thread does it
SLOW_SYSCONFIG = """
import sys, sysconfig, time
assert sysconfig._CONFIG_VARS is None, "sysconfig was initialised before the test could slow it down"
_orig = sysconfig._init_posix
def _slow(config_vars): time.sleep(0.5); _orig(config_vars)
sysconfig._init_posix = _slow
from minirag.cli import main
main(sys.argv[1:])
"""


def _env(root: Path, model_dir: Path) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH") if k in os.environ}
    return {**keep, "BASE_DIR": str(root), "MODEL_NAME": str(model_dir), "CACHE_DIR": str(model_dir.parent)}


def _run(root, model_dir, *args):
    return subprocess.run(
        [sys.executable, "-c", SLOW_SYSCONFIG, *args],
        capture_output=True,
        text=True,
        env=_env(root, model_dir),
        timeout=300,
    )


def _docs(root):
    write(root, "refunds.md", "# Refunds\n\nAn overpayment is refunded within 10 days.\n")
    write(root, "bread.md", "# Baking\n\nKnead the dough for ten minutes.\n")


def test_first_cli_query_with_slow_sysconfig(root, model_dir):
    _docs(root)
    assert (
        subprocess.run(
            [sys.executable, "-m", "minirag.cli", "ingest", str(root)],
            env=_env(root, model_dir),
            capture_output=True,
            timeout=300,
        ).returncode
        == 0
    )
    p = _run(root, model_dir, "query", "overpayment refund", "--top-k", "1", "--json")
    assert p.returncode == 0 and "userbase" not in p.stderr, p.stderr
    assert json.loads(p.stdout)["results"][0]["source"] == str(root / "refunds.md")


# the CLI with a recorder of first-time imports: (thread, module) for every import a non-main thread starts
RECORD_IMPORTS = """
import json, sys, threading
seen = []
class _Recorder:
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            seen.append([threading.current_thread().name, name])
        return None   # only watching: the usual finders do the import
sys.meta_path.insert(0, _Recorder())
from minirag.cli import run
code = run(sys.argv[1:])
print("first-imports-in-threads " + json.dumps(seen), file=sys.stderr)
sys.exit(code)
"""
HEAVY = (
    "fastembed",
    "onnxruntime",
    "tokenizers",
    "loguru",
    "numpy",
    "pyarrow",
    "pandas",
    "duckdb",
    "huggingface_hub",
    "markitdown",
    "sysconfig",
)


def _imports_in_threads(root, model_dir, *args):
    p = subprocess.run(
        [sys.executable, "-c", RECORD_IMPORTS, *args],
        capture_output=True,
        text=True,
        env=_env(root, model_dir),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    line = [l for l in p.stderr.splitlines() if l.startswith("first-imports-in-threads ")][-1]
    return [(t, m) for t, m in json.loads(line.split(" ", 1)[1]) if m.split(".")[0] in HEAVY]


def test_worker_threads_import_nothing_heavy(root, model_dir):
    "Issue 18 item 2: a first sync and a first query import the heavy stack before their worker threads start."
    _docs(root)
    assert _imports_in_threads(root, model_dir, "sync", "--json") == []
    assert _imports_in_threads(root, model_dir, "query", "overpayment refund", "--top-k", "1", "--json") == []


def _send(p, frame: dict):
    p.stdin.write((json.dumps(frame) + "\n").encode())
    p.stdin.flush()


def _answer(p, want_id: int) -> dict:
    while True:
        line = p.stdout.readline()
        assert line, "the server exited before answering"
        msg = json.loads(line)
        if msg.get("id") == want_id:
            return msg


def test_a_client_that_never_lists_the_tools_gets_a_warm_server(root, model_dir):
    """Issue 47 item 5: the warm-up starts after the handshake's answer (it used to wait for a `tools/list`), and runs
    a query both sides of fusion answer (the warm query's words are in neither document)."""
    import threading, time

    _docs(root)
    env = {**_env(root, model_dir), "MINIRAG_DEBUG": "1"}
    ingest = [sys.executable, "-m", "minirag.cli", "ingest", str(root)]
    assert subprocess.run(ingest, env=env, capture_output=True, timeout=300).returncode == 0
    cmd = str(Path(sys.executable).parent / "minirag-mcp")
    p = subprocess.Popen([cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    log, warmed = [], threading.Event()

    def read_log():
        for line in p.stderr:
            log.append(line.decode("utf-8", "replace"))
            if "warm-up done" in log[-1]:
                warmed.set()

    threading.Thread(target=read_log, daemon=True).start()
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        _send(p, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        assert "result" in _answer(p, 0)
        _send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert warmed.wait(timeout=240), "".join(log)  # no tools/list, no call: the server warms up on its own
        done = [line for line in log if "warm-up done" in line][0]
        # both sides of fusion found hits (the tokenizer and the distance scale loaded), the result was converted
        assert all(step in done for step in ("'model'", "'inference'", "'index'", "'fusion'", "'output'")), done
        call = {"name": "query_documents", "arguments": {"query": "overpayment refund", "topK": 1}}
        t0 = time.perf_counter()
        _send(p, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        r = _answer(p, 1)["result"]
        assert r["structuredContent"]["results"][0]["source"] == str(root / "refunds.md"), r
        assert time.perf_counter() - t0 < 30, "".join(log)
    finally:
        p.stdin.close()
        p.wait(timeout=60)
