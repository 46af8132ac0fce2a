"""An unplugged drive or an unreadable folder never stops the other roots, and a sync's counters keep one shape: the
installed `minirag-mcp` CLI and MCP server over stdio as subprocesses, the packaged model, real folders and index."""

import json, os, shutil, subprocess, sys
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from conftest import write

CLI = str(Path(sys.executable).parent / "minirag-mcp")  # the console script pip installed (what PATH runs)
# root keeps uid 0 but loses the capabilities that let it ignore file modes (the interpreter lives under /root, 0700)
DROP = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
COUNTERS = {"scanned", "ingested", "skipped", "moved", "deleted", "relabelled", "unreadable", "failed"}


def env_for(roots: list[Path], db: Path, model_dir: Path) -> dict:
    return {
        **os.environ,
        "BASE_DIRS": json.dumps([str(r) for r in roots]),
        "DB_PATH": str(db),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
    }


def cli(env: dict, *args, prefix=()):
    p = subprocess.run([*prefix, CLI, *args], capture_output=True, text=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


def mcp(env: dict, calls):
    "Run `calls(client)` against `minirag-mcp` over stdio; returns what it returns."
    params = StdioServerParameters(command=CLI, args=[], env=env)
    out = {}

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            out["r"] = await calls(c)

    anyio.run(main)
    return out["r"]


@pytest.fixture
def two_roots(tmp_path, model_dir):
    "Two roots synced by the CLI: `a` holds kangaroos, `b` penguins."
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "kangaroo.md", "# Kangaroos\n\nKangaroos hop across the outback of Australia.\n")
    write(b, "penguin.md", "# Penguins\n\nEmperor penguins huddle through the Antarctic winter.\n")
    write(b, "deep/krill.md", "# Krill\n\nKrill swarms feed the whales of the Southern Ocean.\n")
    env = env_for([a, b], tmp_path / "index", model_dir)
    code, out, err = cli(env, "sync")
    assert code == 0 and "ingested 3" in out, (out, err)
    return a, b, env


def test_a_missing_root_leaves_the_others_working(two_roots, tmp_path):
    a, b, env = two_roots
    b.rename(tmp_path / "b-unplugged")
    code, out, err = cli(env, "list")
    assert code == 0, err
    assert "indexed        kangaroo.md" in out and "unlisted       penguin.md" in out, out
    assert f"warn: {b}: could not list this folder" in err and "2 indexed files" in err, err
    code, out, _ = cli(env, "list", "--json")
    listing = json.loads(out)
    assert {f["filePath"]: f["state"] for f in listing["files"]} == {
        str(a / "kangaroo.md"): "indexed",
        str(b / "penguin.md"): "unlisted",
        str(b / "deep/krill.md"): "unlisted",
    }
    assert listing["indexedButMissing"] == []
    [folder] = listing["unlistedFolders"]
    assert (folder["path"], folder["error"], folder["indexedCount"]) == (str(b), "No such file or directory", 2)
    code, out, err = cli(env, "query", "emperor penguins antarctic", "--json")
    assert code == 0 and json.loads(out)["results"][0]["source"] == str(b / "penguin.md"), (out, err)
    code, out, err = cli(env, "sync")  # the missing root is a failure; its files are kept
    assert code == 1 and "deleted 0" in out and "failed 1" in out, (out, err)
    assert f"warn: {b}: folder not found" in err, err
    code, out, _ = cli(env, "list", "--json")
    assert sum(f["state"] == "unlisted" for f in json.loads(out)["files"]) == 2

    async def calls(c):
        listed = (await c.call_tool("list_files", {})).structured_content
        hits = (await c.call_tool("query_documents", {"query": "krill swarms whales"})).structured_content
        return listed, hits

    listed, hits = mcp(env, calls)
    assert [(u["path"], u["indexedCount"]) for u in listed["unlistedFolders"]] == [(str(b), 2)], listed
    assert hits["results"][0]["source"] == str(b / "deep/krill.md"), hits
    b2 = tmp_path / "b-unplugged"
    b2.rename(b)  # plugged back in: nothing is hidden
    assert mcp(env, lambda c: c.call_tool("list_files", {})).structured_content["unlistedFolders"] == []


def test_a_mistyped_root_with_nothing_indexed_is_still_an_error(two_roots, tmp_path):
    a, b, env = two_roots
    typo = tmp_path / "bb"
    code, out, err = cli({**env, "BASE_DIRS": json.dumps([str(a), str(typo)])}, "list")
    assert code == 1 and f"the document root {typo} does not exist" in err, (out, err)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv (util-linux)")
def test_a_folder_that_cannot_be_listed_is_named_and_its_files_kept(two_roots):
    a, b, env = two_roots
    deep = b / "deep"
    deep.chmod(0)
    try:
        code, out, err = cli(env, "list", "--json", prefix=DROP)
        assert code == 0, err
        listing = json.loads(out)
        states = {f["filePath"]: f["state"] for f in listing["files"]}
        assert states[str(deep / "krill.md")] == "unlisted" and states[str(b / "penguin.md")] == "indexed", states
        assert [(u["path"], u["error"], u["indexedCount"]) for u in listing["unlistedFolders"]] == [
            (str(deep), "Permission denied", 1)
        ]
        assert f"warn: {deep}: could not list this folder (Permission denied)" in err, err
        code, out, err = cli(env, "sync", prefix=DROP)
        assert code == 1 and "deleted 0" in out and f"{deep}: folder cannot be listed" in err, (out, err)
    finally:
        deep.chmod(0o755)


def test_sync_status_counts_have_one_shape_from_the_first_poll(two_roots):
    a, b, env = two_roots
    write(a, "wombat.md", "# Wombats\n\nWombats dig burrows.\n")

    async def calls(c):
        job = (await c.call_tool("sync_start", {})).structured_content
        polls = [(await c.call_tool("sync_status", {"jobId": job["jobId"]})).structured_content]
        while polls[-1]["state"] == "running":
            await anyio.sleep(0.05)
            polls.append((await c.call_tool("sync_status", {"jobId": job["jobId"]})).structured_content)
        return polls

    polls = mcp(env, calls)
    assert all(COUNTERS <= set(p["counts"]) for p in polls), polls[0]
    assert len({tuple(p["counts"]) for p in polls}) == 1, [list(p["counts"]) for p in polls]
    last = polls[-1]["counts"]
    assert {k: last[k] for k in COUNTERS} == dict(
        scanned=4, ingested=1, skipped=3, moved=0, deleted=0, relabelled=0, unreadable=0, failed=0
    ), last


def test_a_missing_root_is_a_sync_error_and_said_by_status(two_roots, tmp_path):
    a, b, env = two_roots
    b.rename(tmp_path / "b-unplugged")
    code, out, err = cli(env, "sync", "--json")
    report = json.loads(out)
    assert code == 1 and (report["failed"], report["deleted"]) == (1, 0), (out, err)
    [e] = report["errors"]
    assert e["source"] == str(b) and "not found" in e["error"] and "its 2 indexed files are kept" in e["error"], e
    assert report["warnings"] == [] and f"warn: {b}: folder not found" in err, (report, err)
    code, out, err = cli(env, "status", "--json")
    assert code == 0, err
    states = {s["path"]: (s["state"], s["indexedCount"]) for s in json.loads(out)["rootStates"]}
    assert states == {str(a): ("present", 1), str(b): ("missing", 2)}, out
    code, out, err = cli(env, "status")
    assert code == 0 and f"roots: {a}, {b} (missing)" in out, (out, err)
    [warn] = [line for line in err.splitlines() if line.startswith(f"warn: {b}: ")]
    assert "its 2 indexed files are kept" in warn and "plug it back in" in warn and "BASE_DIRS" in warn, err

    async def calls(c):
        tools = {t.name: t for t in (await c.list_tools()).tools}
        status = (await c.call_tool("status", {})).structured_content
        job = (await c.call_tool("sync_start", {})).structured_content["jobId"]
        while (st := (await c.call_tool("sync_status", {"jobId": job})).structured_content)["state"] == "running":
            await anyio.sleep(0.05)
        return tools, status, st

    tools, status, st = mcp(env, calls)
    assert [(s["path"], s["state"]) for s in status["rootStates"]] == [(str(a), "present"), (str(b), "missing")]
    assert "plug it back in" in status["rootStates"][1]["message"], status["rootStates"]
    assert st["state"] == "succeeded" and st["counts"]["failed"] == 1 and "errors" not in st["counts"], st
    assert [e["source"] for e in st["errors"]] == [str(b)] and "its 2 indexed files" in st["errors"][0]["error"], st
    jsonschema.validate(st, tools["sync_status"].output_schema)
    jsonschema.validate(status, tools["status"].output_schema)
    assert tools["sync_status"].output_schema["$defs"]["SyncError"]["required"] == ["source", "error"]
