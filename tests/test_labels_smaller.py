"""The smaller edges of labels and listings, through the installed CLI and a real MCP server: nested roots, files
never ingested under a label filter, the empty index's notice, ingest_file on a folder."""

import json, os
from pathlib import Path
import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from conftest import write
from test_labels import CLI, _env, cli

TAXONOMY = """
[facets.project]
default = "main"
values.main = { description = "The main product." }
values.pilots = { description = "Pilot projects.", paths = ["pilots"] }
"""


def test_nested_roots_match_rules_under_the_innermost_root_and_list_a_file_once(tmp_path, model_dir):
    outer = Path(os.path.realpath(tmp_path)) / "docs"
    write(outer, "a.md", "# A\n\nAlpha text.\n")
    write(outer, "notes/b.md", "# B\n\nBeta text.\n")
    write(outer, "notes/pilots/c.md", "# C\n\nGamma text.\n")
    write(outer, ".minirag/classify.toml", TAXONOMY)
    env = {k: v for k, v in _env(outer, model_dir).items() if k != "BASE_DIR"}
    env["BASE_DIRS"] = json.dumps([str(outer), str(outer / "notes")])
    r = cli("sync", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == 3, r.stdout + r.stderr
    files = json.loads(cli("list", "--json", env=env).stdout)["files"]
    assert sorted(f["filePath"] for f in files) == sorted(
        str(outer / n) for n in ("a.md", "notes/b.md", "notes/pilots/c.md")
    ), files
    got = {f["displayPath"]: f["labels"]["project"]["value"] for f in files}
    assert got == {"a.md": "main", "b.md": "main", "pilots/c.md": "pilots"}, got  # `pilots` under notes/


def test_a_label_filter_counts_files_never_ingested(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "a.md", "# A\n\nAlpha text.\n")
    write(root, ".minirag/classify.toml", TAXONOMY)
    env = _env(root, model_dir)
    assert cli("sync", env=env).returncode == 0
    write(root, "pilots/new.md", "# New\n\nNot read yet.\n")  # on disk, never ingested: it has no label yet
    r = json.loads(cli("list", "--label", "project=main", "--json", env=env).stdout)
    assert [f["displayPath"] for f in r["files"]] == ["a.md"] and r["filterCounts"]["unlabelled"] == 1, r
    human = cli("list", "--label", "project=main", env=env)
    assert "1 document(s) in scope left out only for lack of a label" in human.stderr, human.stderr


def test_the_empty_index_and_a_folder_name_the_right_command(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "sub/a.md", "# A\n\nAlpha text.\n")
    env = _env(root, model_dir)
    r = cli("query", "alpha", env=env)
    assert "run `minirag-mcp sync` first" in r.stderr and "sync_start" not in r.stderr, r.stderr

    async def main():
        async with Client(
            StdioServerParameters(command=CLI, args=[], env=env), mode="auto", read_timeout_seconds=120
        ) as c:
            q = await c.call_tool("query_documents", {"query": "alpha"})
            folder = await c.call_tool("ingest_file", {"filePath": str(root / "sub")})
            return q, folder

    q, folder = anyio.run(main)
    assert any("run sync_start first" in w for w in q.structured_content["warnings"]), q.structured_content
    assert folder.is_error and "is a folder, not a file" in folder.content[0].text
    assert "run sync_start with its path" in folder.content[0].text, folder.content[0].text
