"""What a caller reads of a chunk cut from a table or a split code fence, through the installed CLI on a real index.

A row chunk's text starts with the table's header row and separator (document text of its section, repeated so a
row read alone says what its columns mean); a piece of a split fence starts with the split marker line (the one
line of a hit's text that is not document text). The rebuilt document and sections still read exactly as written.
"""

import json, os, subprocess, sys
from pathlib import Path

import pytest
from conftest import write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
MARK = "[code block split to fit the token budget]"
HEADER = "| Bin | Count |\n| --- | --- |\n"
ROWS = "".join(f"| B-{i:02d} | {40 + i} |\n" for i in range(30))
TABLE_DOC = "# Stock\n\nIntro line.\n\n## Levels\n\n" + HEADER + ROWS + "\nAfter the table.\n"
CODE = "```python\n" + "\n".join(f"step_{i} = run_stage({i}, retries={i % 3})" for i in range(40)) + "\n```"
CODE_DOC = "# Build\n\nIntro line.\n\n## Script\n\n" + CODE + "\n\nAfter the code.\n"
KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "MINIRAG_TEST_MODEL_CACHE")


@pytest.fixture(scope="module")
def small(tmp_path_factory, model_dir):
    "A real index of one long table and one long code fence, cut with a 32-token budget: (run, root)."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("chunktext"))) / "docs"
    write(root, "stock.md", TABLE_DOC)
    write(root, "build.md", CODE_DOC)
    env = {k: v for k, v in os.environ.items() if k in KEEP}
    env.update(
        BASE_DIR=str(root),
        DB_PATH=str(root.parent / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        CHUNK_TOKEN_BUDGET="32",
    )

    def run(*args):
        r = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, cwd=root, env=env, timeout=300)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return json.loads(r.stdout)

    out = run("ingest", "stock.md", "build.md")
    assert out["ingested"] == 2 and out["failed"] == 0, out
    return run, root


def neighbours(run, name):
    return run("read-neighbors", "--file-path", name, "--chunk-index", "0", "--before", "0", "--after", "50")["chunks"]


def test_every_row_chunk_reads_with_the_table_header(small):
    run, _ = small
    rows = [c for c in neighbours(run, "stock.md") if "| B-" in c["text"]]
    assert len(rows) > 3, rows  # the table really was cut into several chunks
    for c in rows:
        assert c["text"].startswith(HEADER), c
        assert c["text"][len(HEADER) :].rstrip() in ROWS, c  # after the header: consecutive rows of the document
    q = run("query", "B-17 count", "--top-k", "8")
    hits = [h for h in q["results"] if "| B-" in h["text"]]
    assert hits and all(h["text"].startswith(HEADER) for h in hits), q["results"]
    for h in hits:  # the header and the rows are document text inside the parent section, each written once
        sec = q["parents"][h["parentId"]]
        assert sec.count(HEADER) == 1 and h["text"][len(HEADER) :].rstrip() in sec, (h, sec)


def test_every_piece_of_a_split_fence_carries_the_marker(small):
    run, _ = small
    pieces = [c for c in neighbours(run, "build.md") if "step_" in c["text"]]
    assert len(pieces) > 3, pieces  # the fence was over four budgets, so it was split
    for c in pieces:
        assert c["text"].startswith(MARK + "\n"), c
        assert c["text"][len(MARK) + 1 :].rstrip() in CODE, c  # after the marker: consecutive lines of the fence
    q = run("query", "step_21 run_stage", "--top-k", "8")
    hits = [h for h in q["results"] if "step_" in h["text"]]
    assert hits and all(h["text"].startswith(MARK + "\n") for h in hits), q["results"]
    for h in hits:  # the section is the code as written: no marker in it
        assert MARK not in q["parents"][h["parentId"]] and CODE in q["parents"][h["parentId"]]


def test_documents_read_back_unchanged(small):
    run, _ = small
    for name, doc in (("stock.md", TABLE_DOC), ("build.md", CODE_DOC)):
        text = run("read", name)["text"]
        assert text == doc.rstrip(), (name, text)
        assert MARK not in text and text.count("| Bin | Count |") == (name == "stock.md")
