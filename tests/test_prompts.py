"""Query and document prompts are part of the model; the default model, and indexes built before it, offline.

A model declares its prompts in `config_sentence_transformers.json` (the packaged model plus that file stands in for
an e5-style model). With MODEL_NAME unset an index keeps the model it was built with, and a machine without the model
hub still gets a working first sync (the packaged model, with a note); an explicitly named model that cannot be
downloaded is a clear error.
"""

import json, os, shutil, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

from conftest import write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
PROMPTS = {"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": None}
TEXT = "# Refunds\n\nAn overpayment is refunded to the card it came from within ten working days.\n"


@pytest.fixture(scope="module")
def prompted_dir(model_dir, tmp_path_factory):
    "The packaged model's folder with a prompts file, as sentence-transformers writes it."
    d = tmp_path_factory.mktemp("prompted") / "minilm-prompted"
    shutil.copytree(model_dir, d)
    (d / "config_sentence_transformers.json").write_text(json.dumps(PROMPTS))
    return d


def cli(*args, env, cwd):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def base_env(**kw):
    env = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH") if k in os.environ}
    env.update(HF_HUB_OFFLINE="1")  # the hub is unreachable here anyway; this keeps the test hermetic elsewhere
    env.update({k: str(v) for k, v in kw.items()})
    return env


def test_prompts_change_vectors_and_distances(model_dir, prompted_dir, shared_embedder):
    from minirag.embed import Embedder

    e = Embedder(str(prompted_dir), model_dir.parent)
    plain = shared_embedder
    assert e.prompts == ("query: ", "passage: ") and plain.prompts == ("", "")
    assert e.model_id.startswith("local:minilm-prompted:") and "passage: " in e.model_id
    q, docs = (
        "when is an overpayment refunded",
        ["An overpayment is refunded within ten days.", "The office opens at 9."],
    )
    dv, pdv = e.embed(docs), plain.embed(docs)
    qv, pqv = e.embed_query(q), plain.embed_query(q)
    assert np.abs(dv - pdv).max() > 1e-3 and np.abs(qv - pqv).max() > 1e-3  # each side got its prefix
    assert np.allclose(dv, plain.embed(["passage: " + t for t in docs]), atol=1e-6)
    assert np.allclose(qv, plain.embed(["query: " + q])[0], atol=1e-6)
    assert np.abs((1 - dv @ qv) - (1 - pdv @ pqv)).max() > 1e-3  # and the distances move


def test_an_index_without_prompts_refuses_a_query_with_them_naming_both(root, model_dir, prompted_dir, tmp_path):
    write(root, "refunds.md", TEXT)
    db, cache = tmp_path / "idx", model_dir.parent
    r = cli("sync", env=base_env(BASE_DIR=root, DB_PATH=db, CACHE_DIR=cache, MODEL_NAME=model_dir), cwd=root)
    assert r.returncode == 0, r.stderr
    ok = cli(
        "query",
        "overpayment refund",
        "--json",
        cwd=root,
        env=base_env(BASE_DIR=root, DB_PATH=db, CACHE_DIR=cache, MODEL_NAME=model_dir),
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["results"], ok.stderr
    bad = cli(
        "query",
        "overpayment refund",
        "--json",
        cwd=root,
        env=base_env(BASE_DIR=root, DB_PATH=db, CACHE_DIR=cache, MODEL_NAME=prompted_dir),
    )
    assert bad.returncode != 0
    err = json.loads(bad.stdout)["error"]
    assert "local:all-MiniLM-L6-v2-int8:" in err and "local:minilm-prompted:" in err and "passage: " in err, err
    assert "MODEL_NAME" in err and "re-ingest" in err


def test_the_chunk_budget_counts_the_document_prompt(root, model_dir, prompted_dir, tmp_path):
    from minirag.api import Index, ingest_paths

    body = "\n\n".join(f"Paragraph {i} says that refunds of overpayments take ten working days." for i in range(40))
    write(root, "long.md", "# Long\n\n" + body + "\n")
    budget = 40
    out = {}
    for name, d in (("plain", model_dir), ("prompted", prompted_dir)):
        ix = Index.open(root, tmp_path / name, model_dir.parent, str(d), env={"CHUNK_TOKEN_BUDGET": str(budget)})
        try:
            assert ingest_paths(ix, [str(root)]).failed == 0
            with ix.store.session() as con:
                out[name] = con.execute("SELECT max(tokens), count(*) FROM chunks").fetchone()
            prompt = ix.engine.embedder.prompt_tokens(ix.engine.counter.count)
        finally:
            ix.close()
    assert prompt == 2  # "passage", ":"
    assert out["plain"][0] <= budget and out["prompted"][0] <= budget - prompt, out
    assert out["prompted"][0] > budget - prompt - 12 and out["prompted"][1] >= out["plain"][1]


def test_unset_model_name_keeps_the_index_model_with_a_note(root, model_dir, tmp_path):
    "An index built before the default changed keeps working: its own model is used, and a note says how to move."
    write(root, "refunds.md", TEXT)
    db, cache = tmp_path / "idx", model_dir.parent
    assert (
        cli("sync", env=base_env(BASE_DIR=root, DB_PATH=db, CACHE_DIR=cache, MODEL_NAME=model_dir), cwd=root).returncode
        == 0
    )
    env = base_env(BASE_DIR=root, DB_PATH=db, CACHE_DIR=cache)  # MODEL_NAME unset: the default is the hub model
    q = cli("query", "overpayment refund", "--json", env=env, cwd=root)
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout)["results"][0]["source"].endswith("refunds.md")
    notes = [line for line in q.stderr.splitlines() if "MODEL_NAME is unset" in line]
    assert notes == [], q.stderr  # said once (the first write, and status), never on every query
    s = json.loads(cli("status", "--json", env=env, cwd=root).stdout)
    assert (
        s["indexedModel"].startswith("local:all-MiniLM-L6-v2-int8:")
        and s["modelName"] == "intfloat/multilingual-e5-small"
    )
    assert s["modelNote"].startswith("local:all-MiniLM-L6-v2-int8:") and "keeps it" in s["modelNote"]
    # a sync with MODEL_NAME unset adds to the index with its own model: no refusal on upgrade
    write(root, "hours.md", "# Hours\n\nThe office opens at nine.\n")
    r = cli("sync", env=env, cwd=root)
    assert r.returncode == 0, r.stderr
    assert json.loads(cli("status", "--json", env=env, cwd=root).stdout)["sourceCount"] == 2


def test_an_index_of_the_old_hub_default_asks_for_that_model_not_the_new_one(root, model_dir, tmp_path):
    """An index recording the old default is not refused as a mismatch: the old model is loaded (here: offline, so a
    clear download error)."""
    from minirag.api import Index, ingest_paths

    write(root, "refunds.md", TEXT)
    db = tmp_path / "idx"
    ix = Index.open(root, db, model_dir.parent, str(model_dir))
    assert ingest_paths(ix, [str(root)]).failed == 0
    ix.tables.set_meta(model_id="sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2")
    ix.close()
    env = base_env(BASE_DIR=root, DB_PATH=db, CACHE_DIR=tmp_path / "empty-cache")
    r = cli("query", "overpayment refund", "--json", env=env, cwd=root)
    err = json.loads(r.stdout)["error"]
    assert (
        r.returncode != 0 and "could not download embedding model 'sentence-transformers/paraphrase-multilingual" in err
    ), err
    assert "cannot be mixed" not in err
    kw = cli("query", "overpayment refund", "--json", "--weight", "1", env=env, cwd=root)  # keywords need no model
    assert kw.returncode == 0 and json.loads(kw.stdout)["results"], kw.stderr


def test_a_first_sync_without_the_hub_uses_the_packaged_model_with_a_note(root, tmp_path):
    write(root, "refunds.md", TEXT)
    env = base_env(BASE_DIR=root, DB_PATH=tmp_path / "idx", CACHE_DIR=tmp_path / "fresh-cache")
    before = json.loads(cli("status", "--json", env=env, cwd=root).stdout)
    assert "the default" in before["modelNote"] and "packaged English model" in before["modelNote"]
    r = cli("sync", env=env, cwd=root)
    assert r.returncode == 0, r.stderr
    assert "could not be downloaded" in r.stderr and "all-MiniLM-L6-v2-int8" in r.stderr
    q = cli("query", "overpayment refund", "--json", env=env, cwd=root)
    assert q.returncode == 0 and json.loads(q.stdout)["results"], q.stderr
    s = json.loads(cli("status", "--json", env=env, cwd=root).stdout)
    assert s["indexedModel"].startswith("local:all-MiniLM-L6-v2-int8:") and "keeps it" in s["modelNote"]


def test_a_named_model_that_cannot_be_downloaded_is_a_clear_error(root, tmp_path):
    write(root, "refunds.md", TEXT)
    cache = tmp_path / "fresh-cache"
    env = base_env(
        BASE_DIR=root, DB_PATH=tmp_path / "idx", CACHE_DIR=cache, MODEL_NAME="intfloat/multilingual-e5-small"
    )
    r = cli("sync", "--json", env=env, cwd=root)
    assert r.returncode != 0
    msg = r.stdout + r.stderr
    assert "could not download embedding model 'intfloat/multilingual-e5-small'" in msg and str(cache) in msg
    assert "Fix:" in msg and "local directory" in msg
