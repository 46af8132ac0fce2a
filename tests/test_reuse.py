"""Chunk-level reuse: a chunk whose encoder input is already in the index takes that vector instead of a new embedding
(within a re-ingested file, across files, across a move with an edit), and every vector is the same bits a fresh
ingest gives. Real packaged model, real DuckDB files, the installed CLI in a subprocess for one of the syncs."""

import os, shutil, subprocess
from pathlib import Path
import pytest
from conftest import write
from minirag.api import Index
import minirag.ingest as mingest
from minirag.store import build_lookups, remove_lookups

FIDELITY = Path(__file__).parent / "data" / "fidelity"
NOTICE = (
    "## Confidentiality\n\nThis document is confidential. Do not copy, forward or print it without the written "
    "consent of the records office. Report a lost copy to the records office at once.\n\n"
)


def contract(party: str, days: int) -> str:
    return (
        f"# Supply contract\n\nBetween the buyer and {party}.\n\n{NOTICE}## Delivery\n\n"
        f"{party} delivers the goods within {days} days of the order, to the warehouse named in it.\n\n"
        f"## Payment\n\nThe buyer pays {party} within 30 days of the invoice.\n\n{NOTICE}"
    )


def corpus(root: Path):
    "Contracts sharing a notice, a sheet (header row in each chunk), real HTML and text, and one file copied."
    for i, party in enumerate(["Acme", "Globex", "Initech", "Umbrella"]):
        write(root, f"contracts/{party.lower()}.md", contract(party, 10 + i))
    sheet = "item,qty,warehouse\n" + "".join(f"part-{i},{i % 7},north-{i % 3}\n" for i in range(400))
    write(root, "stock.csv", sheet)
    for n in ("install-ch01s04.ru.html", "dedication-2.2.it.txt"):
        shutil.copy(FIDELITY / n, root / n)
    shutil.copy(FIDELITY / "dedication-2.2.it.txt", root / "copy-of-dedication.txt")


def rows(ix) -> dict:
    "(source relative to the root, chunk index) -> (text, vector bytes) of every chunk."
    base = str(ix.cfg.roots[0])
    with ix.store.session() as c:
        got = c.execute("SELECT source, chunk_index, text, emb::FLOAT[] FROM chunks").fetchall()
    import numpy as np

    return {(s.replace(base, ""), i): (t, np.asarray(e, dtype=np.float32).tobytes()) for s, i, t, e in got}


def inputs(ix) -> set:
    with ix.store.session() as c:
        return {r[0] for r in c.execute("SELECT DISTINCT text FROM chunks").fetchall()}


def fresh(root: Path, db: Path, model_dir, embedder) -> dict:
    "The index a fresh ingest of `root` gives: every chunk embedded as it comes, nothing looked up."
    old, mingest.Pipeline.reuse = mingest.Pipeline.reuse, False
    try:
        ix = Index.open(root, db_path=db, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=embedder)
        calls = embedder.calls
        r = ix.sync()
        assert r.failed == 0, r.warnings
        got = rows(ix)
        assert embedder.calls - calls == len(got), "the fresh side embeds every chunk"
        ix.close()
        return got
    finally:
        mingest.Pipeline.reuse = old


def cli_sync(root: Path, db: Path, model_dir):
    env = {
        **os.environ,
        "BASE_DIR": str(root),
        "DB_PATH": str(db),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
    }
    p = subprocess.run(
        [shutil.which("minirag-mcp") or "minirag-mcp", "sync", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stderr


@pytest.fixture(scope="module")
def synced(tmp_path_factory, model_dir):
    "A mixed corpus synced by the installed CLI (reuse on)."
    tmp = tmp_path_factory.mktemp("reuse")
    root = Path(os.path.realpath(tmp)) / "docs"
    root.mkdir()
    corpus(root)
    cli_sync(root, tmp / "index", model_dir)
    return root, tmp


def open_ix(root, tmp, model_dir, embedder):
    return Index.open(
        root, db_path=tmp / "index", model_name=str(model_dir), cache_dir=model_dir.parent, embedder=embedder
    )


def test_first_sync_bit_identical_to_fresh_and_repeats_embedded_once(synced, model_dir, shared_embedder):
    root, tmp = synced
    ix = open_ix(root, tmp, model_dir, shared_embedder)
    got = rows(ix)
    with ix.store.session() as c:
        n, distinct, keyless = c.execute(
            "SELECT count(*), count(DISTINCT text), count(*) FILTER (WHERE ehash IS NULL) FROM chunks"
        ).fetchone()
    ix.close()
    assert keyless == 0, "every chunk written carries its encoder-input key"
    assert distinct <= n - 10, "the corpus repeats chunks: the notices and the copied file"
    assert got == fresh(root, tmp / "fresh-1", model_dir, shared_embedder)


def test_resync_embeds_only_new_inputs_across_files_and_moves(synced, model_dir, shared_embedder):
    root, tmp = synced
    ix = open_ix(root, tmp, model_dir, shared_embedder)
    before = inputs(ix)
    # one paragraph edited; a file moved and edited; a new file that repeats a known one
    p = root / "contracts" / "acme.md"
    p.write_text(p.read_text().replace("within 10 days", "within 12 days"))
    moved = root / "archive" / "globex-2026.md"
    moved.parent.mkdir()
    (root / "contracts" / "globex.md").rename(moved)
    moved.write_text(moved.read_text().replace("within 30 days", "within 45 days"))
    shutil.copy(root / "install-ch01s04.ru.html", root / "archive" / "install-copy.html")
    calls = shared_embedder.calls
    r = ix.sync()
    assert (r.ingested, r.deleted, r.failed) == (3, 1, 0), r
    embedded = shared_embedder.calls - calls
    new = inputs(ix) - before
    total = len(rows(ix))
    ix.close()
    assert 0 < len(new) <= 4, new  # the edited paragraphs (and a title that names the file)
    assert embedded == len(new), (embedded, new)  # everything else found: old name, other files, the copy
    assert rows(open_ix(root, tmp, model_dir, shared_embedder)) == fresh(
        root, tmp / "fresh-2", model_dir, shared_embedder
    )
    assert embedded < total // 10


def test_index_without_keys_is_filled_on_first_need(synced, model_dir, shared_embedder):
    "An index written before the key column: the first write that looks adds it and keys every row from its text."
    root, tmp = synced
    ix = open_ix(root, tmp, model_dir, shared_embedder)
    with ix.store.session() as c:  # as an index written before the column: no key, its lookup indexes in place
        remove_lookups(c)
        c.execute("ALTER TABLE chunks DROP COLUMN ehash")
        assert build_lookups(c)
    ix.close()
    ix = open_ix(root, tmp, model_dir, shared_embedder)
    p = root / "contracts" / "initech.md"
    p.write_text(p.read_text().replace("within 12 days", "within 14 days"))
    calls = shared_embedder.calls
    ix.ingest(p)  # one file, in the caller's thread (`ingest_one`)
    assert shared_embedder.calls - calls == 1  # only the edited paragraph
    with ix.store.session() as c:
        assert c.execute("SELECT count(*) FROM chunks WHERE ehash IS NULL").fetchone()[0] == 0
    ix.close()
