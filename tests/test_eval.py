"`minirag-mcp eval`: a BEIR folder in, recall@10 / MRR@10 / nDCG@10 out; the built index is cached per set and model."

import io, json
from pathlib import Path
import pytest
from minirag.cli import run
from minirag.evaluate import load_beir, metrics, evaluate, index_key, parse_weights
from minirag.config import MiniragError

DOCS = [
    ("net", "Network errors", "The proxy raises ERR_CONNECTION_REFUSED when nothing listens on the port."),
    ("bread", "", "Knead the dough for ten minutes and let it rise for an hour in a warm place."),
    ("garden", "Garden", "Water tomatoes in the morning; mulch keeps the soil moist during heat."),
    ("imp", "Import tool", "When the header row is empty the importer stops with E-1042 and writes nothing."),
    ("cake", "Cakes", "Bake the sponge at 180 degrees until a skewer comes out clean."),
]
QUERIES = [
    ("q1", "how do I make a loaf of bread rise"),
    ("q2", "E-1042"),
    ("q3", "watering vegetables"),
    ("q4", "what does ERR_CONNECTION_REFUSED mean"),
]
QRELS = [("q1", "bread", 1), ("q2", "imp", 1), ("q3", "garden", 1), ("q4", "net", 1)]


def make_set(d: Path, docs=DOCS, queries=QUERIES, qrels=QRELS) -> Path:
    (d / "qrels").mkdir(parents=True, exist_ok=True)
    (d / "corpus.jsonl").write_text("".join(json.dumps(dict(_id=i, title=t, text=x)) + "\n" for i, t, x in docs))
    (d / "queries.jsonl").write_text("".join(json.dumps(dict(_id=i, text=x)) + "\n" for i, x in queries))
    (d / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t{s}\n" for q, c, s in qrels)
    )
    return d


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    return run(list(argv), out, err), out.getvalue(), err.getvalue()


def test_eval_cli_json(tmp_path, model_dir):
    ds = make_set(tmp_path / "tiny")
    rc, out, err = cli(
        "eval",
        str(ds),
        "--weights",
        "0,0.5,1",
        "--json",
        "--db-path",
        str(tmp_path / "db"),
        "--cache-dir",
        str(model_dir.parent),
    )
    assert rc == 0, err
    r = json.loads(out)
    assert r["set"] == "tiny" and r["queries"] == 4
    assert set(r) >= {"vector", "keyword", "hybrid", "rrf", "runs", "hybridAtLeastBest"}
    assert r["hybrid"]["MRR@10"] == 1.0 and r["hybridAtLeastBest"] is True
    sweep = [x for x in r["runs"] if x["method"] == "sweep"]
    assert sorted({x["weight"] for x in sweep}) == [0.0, 0.5, 1.0]
    assert {x["fusion"] for x in sweep if x["weight"] == 0.5} == {"adaptive", "rrf"}


def test_eval_index_is_built_once_and_reused(tmp_path, model_dir, shared_embedder):
    ds = make_set(tmp_path / "tiny")
    before = shared_embedder.calls
    evaluate(ds, "0,1", db_dir=tmp_path / "db", embedder=shared_embedder)
    first = shared_embedder.calls - before
    assert first > len(QUERIES)  # documents and queries embedded
    evaluate(ds, "0,1", db_dir=tmp_path / "db", embedder=shared_embedder)
    assert shared_embedder.calls - before - first == len(QUERIES)  # second run: only the queries
    indexes = lambda: [p for p in (tmp_path / "db").iterdir() if p.name != "vectors"]
    assert len(indexes()) == 1
    # a changed corpus gets a new index, but the vectors of unchanged documents are reused (cached by text)
    make_set(ds, DOCS[:-1])
    n = shared_embedder.calls
    evaluate(ds, "0,1", db_dir=tmp_path / "db", embedder=shared_embedder)
    assert len(indexes()) == 2 and shared_embedder.calls - n == len(QUERIES)


def test_interrupted_build_is_redone(tmp_path, shared_embedder):
    ds = make_set(tmp_path / "tiny")
    key = index_key(load_beir(ds), shared_embedder.model_id, 110)
    stale = tmp_path / "db" / f"tiny-{key}"
    stale.mkdir(parents=True)
    from minirag.store import Store

    st = Store(stale / "index.duckdb")
    with st.session() as con:
        pass  # an empty index without the finished-build marker
    st.close()
    df = evaluate(ds, "0", db_dir=tmp_path / "db", embedder=shared_embedder)
    assert float(df[df.method == "vector"]["recall@10"].iloc[0]) == 1.0


def test_limit_queries(tmp_path, shared_embedder):
    df = evaluate(make_set(tmp_path / "tiny"), "0.5", limit_queries=2, db_dir=tmp_path / "db", embedder=shared_embedder)
    assert set(df.queries) == {2}


def test_text_output_and_errors(tmp_path, model_dir):
    ds = make_set(tmp_path / "tiny")
    rc, out, _ = cli(
        "eval", str(ds), "--weights", "0.6", "--db-path", str(tmp_path / "db"), "--cache-dir", str(model_dir.parent)
    )
    assert (
        rc == 0 and "nDCG@10" in out and "weight sweep" in out and "hybrid nDCG@10 ≥ max(vector, keyword): yes" in out
    )
    rc, _, err = cli("eval", str(tmp_path), "--db-path", str(tmp_path / "db"), "--cache-dir", str(model_dir.parent))
    assert rc == 1 and "corpus.jsonl" in err and "Traceback" not in err
    rc, _, err = cli(
        "eval", str(ds), "--weights", "0,2", "--db-path", str(tmp_path / "db"), "--cache-dir", str(model_dir.parent)
    )
    assert rc == 2 and "0.0..1.0" in err  # a bad option value is a usage error
    rc, _, err = cli(
        "eval", str(ds), "--limit-queries", "0", "--db-path", str(tmp_path / "db"), "--cache-dir", str(model_dir.parent)
    )
    assert rc == 2 and "limit-queries" in err


def test_bad_files_are_named(tmp_path):
    ds = make_set(tmp_path / "bad")
    (ds / "queries.jsonl").write_text("{not json\n")
    with pytest.raises(MiniragError, match="queries.jsonl line 1"):
        load_beir(ds)
    make_set(ds, qrels=[("nope", "bread", 1)])
    with pytest.raises(MiniragError, match="no query"):
        load_beir(ds)
    with pytest.raises(MiniragError, match="comma-separated"):
        parse_weights("a,b")


def test_metrics_with_grades():
    r, m, n = metrics(["a", "b", "c"], {"c": 2, "a": 1})
    assert (r, m) == (1.0, 1.0)
    import math

    assert n == pytest.approx((1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3)))


# ---- honest tuning: fixed halves, held-out figures, per-language figures (issue 15) -------------


def test_tuning_half_is_a_fixed_split():
    from minirag.evaluate import tuning_half

    qs = [f"q-{i}" for i in range(400)]
    assert [tuning_half(q) for q in qs] == [tuning_half(q) for q in qs]
    assert 150 < sum(map(tuning_half, qs)) < 250


def test_query_language():
    from minirag.evaluate import query_language

    assert query_language("Как обновить Debian?") == "ru" and query_language("Wie aktualisiere ich?", "de") == "de"
    assert query_language("обновить apt", "en") == "ru" and query_language("How?", "") == "other"


def test_eval_reports_held_out_half_and_languages(tmp_path, model_dir):
    ds = make_set(tmp_path / "tiny", queries=QUERIES + [("q5", "как испечь хлеб")], qrels=QRELS + [("q5", "bread", 1)])
    (ds / "meta.json").write_text(json.dumps({"lang": "en"}))
    rc, out, err = cli(
        "eval",
        str(ds),
        "--weights",
        "0.6",
        "--json",
        "--db-path",
        str(tmp_path / "db"),
        "--cache-dir",
        str(model_dir.parent),
    )
    assert rc == 0, err
    r = json.loads(out)
    assert (
        set(r["languages"]) == {"en", "ru"}
        and r["languages"]["ru"]["queries"] == 1
        and r["languages"]["en"]["queries"] == 4
    )
    assert set(r["heldOut"]) == {"vector", "keyword", "hybrid"} and "hybridAtLeastBestHeldOut" in r
    assert all({"nDCG@10 tuning", "nDCG@10 held-out"} <= set(x) for x in r["runs"])
    m = r["margins"]["all"]  # hybrid against the better side, query by query
    assert m["queries"] == 5 and m["against"] in {"vector", "keyword"} and m["won"] + m["lost"] <= 5
    assert m["interval"][0] <= m["gap"] <= m["interval"][1]
    rc, out, _ = cli(
        "eval", str(ds), "--weights", "0.6", "--db-path", str(tmp_path / "db"), "--cache-dir", str(model_dir.parent)
    )
    assert "language ru (1 queries)" in out and "held-out half" in out
    assert "on all (5 queries)" in out and "95% interval" in out


def test_man_page_split_for_the_held_out_sets():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from build_eval_sets import split_page

    page = (
        "LS(1)   General Commands Manual   LS(1)\n\n"
        "BEZEICHNUNG\n       ls - den Inhalt von Verzeichnissen auflisten\n\n"
        "ÜBERSICHT\n       ls [OPTION]... [DATEI]...\n\nBESCHREIBUNG\n       "
        + "Auflisten von Informationen über die DATEIen. " * 8
        + "\n\nGNU coreutils 9.1   2022   LS(1)"
    )
    desc, body = split_page(page, "de")
    assert desc == "den Inhalt von Verzeichnissen auflisten"
    assert "BEZEICHNUNG" not in body and "Inhalt von" not in body and body.startswith("ÜBERSICHT")
    assert split_page("FOO(1)\n\nNAME\n       foo\n", "de") is None
