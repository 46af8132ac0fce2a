"Search tuning: RAG_GROUPING / RAG_MAX_DISTANCE / RAG_MAX_FILES through Index.query with env config, and both fusions."

from pathlib import Path
import pytest
import system_tools
from conftest import need_tool, write
from minirag.api import Index, ingest_paths
from minirag.chunk import CODE_SPLIT_MARK, table_header
from minirag.search import (
    Ranked,
    group_cut,
    apply_filters,
    fuse,
    fuse_adaptive,
    fuse_lists,
    COS_SCALE,
    informativeness,
    effective_weight,
)

from test_foundation import DOCS as FOUNDATION_DOCS
from minirag.wire import to_wire  # the typed results as the MCP tools return them

DOCS = {
    **FOUNDATION_DOCS,  # the foundation corpus, with a longer baking document and one more about cakes
    "bread.md": "# Baking bread\n\nKnead the dough for ten minutes and let it rise for an hour in a warm place.\n\n"
    "## Sourdough\n\nA sourdough starter needs flour and water every day.\n",
    "cake.md": "# Cakes\n\nBake the sponge at 180 degrees until a skewer comes out clean.\n",
}


@pytest.fixture
def docs_root(root):
    for n, t in DOCS.items():
        write(root, n, t)
    return root


def open_ix(root, model_dir, emb, **env):
    return Index.open(
        root,
        model_name=str(model_dir),
        cache_dir=model_dir.parent,
        embedder=emb,
        env={k: str(v) for k, v in env.items()},
    )


@pytest.fixture
def built(docs_root, model_dir, shared_embedder):
    ix = open_ix(docs_root, model_dir, shared_embedder)
    assert to_wire(ingest_paths(ix, [docs_root]))["failed"] == 0
    yield ix
    ix.close()


def ids(r):
    return [(h["source"], h["chunkIndex"]) for h in r["results"]]


# --- constructed distance lists -------------------------------------------------------------


def hits(ds):
    return [Ranked(i, 1.0 / (i + 1), d) for i, d in enumerate(ds)]


def test_grouping_needs_three_distances():
    hs = hits([0.1, None, 0.9, None])  # two distances only: no boundary may exist
    assert group_cut(hs, "similar") == hs and group_cut(hs, "related") == hs


def test_grouping_keeps_hits_without_distance_and_fused_order():
    # fused order deliberately differs from distance order
    hs = hits([0.52, None, 0.10, 0.90, 0.11, 0.50, None, 0.12])
    got = [h.chunk_id for h in group_cut(hs, "similar")]
    assert got == [1, 2, 4, 6, 7]  # group {0.10, 0.11, 0.12} + both None hits, fused order
    got = [h.chunk_id for h in group_cut(hs, "related")]
    assert got == [0, 1, 2, 4, 5, 6, 7]  # second group {0.50, 0.52} joins; 0.90 is cut


def test_grouping_boundary_is_strictly_more_than_twice_the_mean_gap():
    # gaps 0.1, 0.2: mean 0.15, 0.2 is not > 0.3 → no boundary
    hs = hits([0.1, 0.2, 0.4])
    assert group_cut(hs, "similar") == hs
    # gaps 0.01, 0.01, 0.1: mean 0.04, 0.1 > 0.08 → boundary after 0.12
    assert [h.chunk_id for h in group_cut(hits([0.10, 0.11, 0.12, 0.22]), "similar")] == [0, 1, 2]


def test_related_without_a_second_boundary_keeps_everything():
    hs = hits([0.10, 0.11, 0.12, 0.50, 0.51])
    assert [h.chunk_id for h in group_cut(hs, "similar")] == [0, 1, 2]
    assert group_cut(hs, "related") == hs


def test_equal_distances_have_no_boundary():
    hs = hits([0.3, 0.3, 0.3, 0.3])
    assert group_cut(hs, "similar") == hs


def test_max_distance_drops_farther_and_distance_less_hits():
    hs = hits([0.2, None, 0.31, 0.3, None])
    assert [h.chunk_id for h in apply_filters(hs, max_distance=0.3)] == [0, 3]


def test_max_files_keeps_first_n_sources_in_rank_order():
    src = {0: "b", 1: "a", 2: "b", 3: "c", 4: "a", 5: "c"}
    assert [h.chunk_id for h in apply_filters(hits([None] * 6), max_files=2, source_of=src.get)] == [0, 1, 2, 4]


def test_filters_fill_top_k_before_grouping():
    hs = hits([0.9, 0.1, 0.11, 0.12, 0.5, 0.13])
    # max_distance removes hit 0, the cut to 4 then sees 0.1, 0.11, 0.12, 0.5 → similar keeps the first three
    assert [h.chunk_id for h in apply_filters(hs, "similar", 0.6, top_k=4)] == [1, 2, 3]


# --- fusion -----------------------------------------------------------------------------------


def test_weight_ends_are_pure_orders_for_both_fusions():
    vec = [(1, 0.1), (2, 0.2), (3, 0.3)]
    kw = [(3, 9.0), (4, 5.0), (1, 1.0)]
    for f in ("adaptive", "rrf"):
        assert [h.chunk_id for h in fuse_lists(vec, kw, 0.0, f)] == [1, 2, 3]
        assert [h.chunk_id for h in fuse_lists(vec, kw, 1.0, f)] == [3, 4, 1]


def test_rrf_is_exact_weighted_rrf():
    h = {x.chunk_id: x.score for x in fuse([(1, 0.1), (2, 0.2)], [(2, 5.0)], 0.6)}
    assert h[1] == pytest.approx(0.4 / 61) and h[2] == pytest.approx(0.4 / 62 + 0.6 / 61)


def test_adaptive_scores_are_scale_aware():
    vec = [(1, 0.30), (2, 0.30 + COS_SCALE)]
    kw = [(2, 8.0), (1, 4.0)]
    h = {x.chunk_id: x.score for x in fuse_adaptive(vec, kw, 0.5)}
    assert h[1] == pytest.approx(0.5 * 1 + 0.5 * 0.5) and h[2] == pytest.approx(0.5 * 0 + 0.5 * 1)


def test_adaptive_flat_vector_side_lets_keywords_decide():
    vec = [(i, 0.40 + 0.001 * i) for i in range(1, 6)]  # the model cannot tell them apart
    kw = [(4, 6.0), (2, 3.0)]
    assert [h.chunk_id for h in fuse_adaptive(vec, kw, 0.6)][:2] == [4, 2]


def test_adaptive_flat_keyword_side_keeps_vector_order():
    vec = [(1, 0.2), (2, 0.3), (3, 0.4)]
    kw = [(3, 2.00), (2, 1.99), (1, 1.98)]
    assert [h.chunk_id for h in fuse_adaptive(vec, kw, 0.6)] == [1, 2, 3]


# --- end to end through Index.query with env config --------------------------------------------


def test_max_distance_from_env(built, docs_root, model_dir, shared_embedder):
    base = to_wire(built.query("connection refused by the server", top_k=6))
    ix = open_ix(docs_root, model_dir, shared_embedder, RAG_MAX_DISTANCE=0.75)
    r = to_wire(ix.query("connection refused by the server", top_k=6))
    assert r["results"] and all(h["distance"] is not None and h["distance"] <= 0.75 for h in r["results"])
    kept = [
        (h["source"], h["chunkIndex"]) for h in base["results"] if h["distance"] is not None and h["distance"] <= 0.75
    ]
    assert ids(r)[: len(kept)] == kept  # same fused order, filled further from the candidates
    assert sum(s["hits"] for s in r["sources"]) == len(r["results"])


def test_max_distance_drops_keyword_only_hits(built, docs_root, model_dir, shared_embedder):
    r = to_wire(built.query("E-1042", top_k=8, weight=1.0))  # w=1: no distances at all
    assert r["results"]
    ix = open_ix(docs_root, model_dir, shared_embedder, RAG_MAX_DISTANCE=2.0, RAG_HYBRID_WEIGHT=1.0)
    assert to_wire(ix.query("E-1042", top_k=8))["results"] == []


def test_max_files_from_env(built, docs_root, model_dir, shared_embedder):
    q = "bread dough baking"
    base = to_wire(built.query(q, top_k=20))
    first2 = list(dict.fromkeys(h["source"] for h in base["results"]))[:2]
    r = to_wire(open_ix(docs_root, model_dir, shared_embedder, RAG_MAX_FILES=2).query(q, top_k=20))
    assert [s["source"] for s in r["sources"]] == first2
    assert ids(r) == [x for x in ids(base) if x[0] in first2]


@pytest.mark.parametrize("grouping", ["similar", "related"])
def test_grouping_from_env_cuts_the_result_list(built, docs_root, model_dir, shared_embedder, grouping):
    q = "how do I bake bread"
    base = to_wire(built.query(q, top_k=10))
    r = to_wire(open_ix(docs_root, model_dir, shared_embedder, RAG_GROUPING=grouping).query(q, top_k=10))
    hs = [Ranked(i, 0.0, h["distance"]) for i, h in enumerate(base["results"])]
    want = [ids(base)[h.chunk_id] for h in group_cut(hs, grouping)]
    assert ids(r) == want  # exactly the grouped result list, fused order kept
    assert sum(s["hits"] for s in r["sources"]) == len(r["results"])


@pytest.mark.parametrize("fusion", ["adaptive", "rrf"])
@pytest.mark.parametrize(
    "q,doc",
    [
        ("ERR_CONNECTION_REFUSED", "errors-catalog.md"),
        ("E-1042", "import.md"),
        ("v2.3.1", "release.md"),
        ("my_func_name", "release.md"),
        ("what does E-1042 mean when importing", "import.md"),
        ("сервера", "servers-ru.md"),
        ("резервными копиями серверов", "servers-ru.md"),
    ],
)
def test_identifiers_rank_first_with_either_fusion(built, monkeypatch, fusion, q, doc):
    monkeypatch.setattr(built.cfg, "fusion", fusion)
    assert Path(to_wire(built.query(q, top_k=5))["results"][0]["source"]).name == doc


def test_bad_fusion_env_is_a_clear_error(built):
    from minirag.config import MiniragError
    from minirag.api import Index

    ix = Index.open(
        built.cfg.roots, built.cfg.db_path, built.cfg.cache_dir, built.cfg.model_name, env={"RAG_FUSION": "fancy"}
    )
    assert "RAG_FUSION='fancy'" in to_wire(ix.status())["configError"]
    with pytest.raises(MiniragError, match="RAG_FUSION"):
        ix.query("bread")


# ---- R-T4: a hit's text is document text, proven from outside on a mixed corpus --------------------

import json, os, re, shutil, subprocess, sys

REPO = Path(__file__).resolve().parent.parent


def _cli(*args):
    r = subprocess.run([sys.executable, "-m", "minirag.cli", *args], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _ws(s):
    return re.sub(r"\s+", " ", s).strip()


def _in_section(text, sec):
    """A hit's text lies in its section; the split marker line is not document text, a row chunk's table header is
    (once)."""
    text = text.removeprefix(CODE_SPLIT_MARK + "\n")
    h = table_header(text)
    return _ws(text[len(h) :]) in _ws(sec) and _ws(h) in _ws(sec)


WORD97_FIXTURES = {"alpaca_tz.doc", "dedoc_example.doc", "test-ole-file.doc"}  # read by antiword alone


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, model_dir):
    "Every fixture file of tests/data and every bundled sample document (all formats), ingested by the CLI."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("mixed")))
    files = [
        p
        for d in (REPO / "tests" / "data", REPO / "minirag" / "sample_docs")
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.suffix not in (".py", ".pyc", ".gz")
    ]
    if system_tools.problem("antiword"):  # the Word 97 files need it: left out here (the office tests cover them)
        if system_tools.required():
            need_tool("antiword")
        files = [p for p in files if p.name not in WORD97_FIXTURES]
    files = list({p.name: p for p in files}.values())  # one flat folder: of two files with one name, the last
    for p in files:
        shutil.copy(p, root / p.name)
    common = ["--base-dir", str(root), "--model-name", str(model_dir), "--cache-dir", str(model_dir.parent), "--json"]
    out = _cli("ingest", str(root), *common)
    assert out["failed"] == 0 and out["ingested"] == len(files)
    return root, common, {p.name for p in files}


def test_hit_text_lies_inside_its_parent_section_for_every_document(mixed):
    root, common, names = mixed
    st = _cli("list", *common)
    titles = {Path(f["filePath"]).name: f["title"] for f in st["files"]}
    seen = set()
    for name in sorted(names):
        title = titles.get(name) or Path(name).stem
        q = _cli("query", title, "--top-k", "100", *common)
        assert q["results"], name
        for h in q["results"]:
            assert _in_section(h["text"], q["parents"][h["parentId"]]), (
                name,
                h["source"],
                h["chunkIndex"],
                h["text"][:120],
            )
            seen.add(Path(h["source"]).name)
        if name in (
            "SPEC-112_Warehouse stock.md",
            "big_table.md",
            "backup-policy-ru.docx",
        ):  # title line, table header, breadcrumb
            nb = _cli(
                "read-neighbors",
                "--file-path",
                str(root / name),
                "--chunk-index",
                "0",
                "--before",
                "0",
                "--after",
                "3",
                *common,
            )
            checked = [c for c in nb["chunks"] if c["parentId"] in q["parents"]]
            assert checked, name
            for c in checked:
                assert _in_section(c["text"], q["parents"][c["parentId"]]), (name, c["chunkIndex"])
    assert seen == names  # every document of the corpus was checked through at least one hit


@pytest.mark.parametrize(
    "q,name",
    [
        ("SPEC-112", "SPEC-112_Warehouse stock.md"),
        ("SPEC-112 Warehouse stock", "SPEC-112_Warehouse stock.md"),
        ("Регламент резервного копирования", "backup-policy-ru.docx"),
    ],
)
def test_titles_stay_searchable(mixed, q, name):
    root, common, _ = mixed
    r = _cli("query", q, "--top-k", "5", *common)
    assert Path(r["results"][0]["source"]).name == name
    assert not any(h["text"].lstrip().startswith("# SPEC-112 Warehouse stock") for h in r["results"])


# ---- fusion that knows when a side carries no signal (issue 15) ----------------------------------


def test_a_flat_vector_side_does_not_decide_between_keyword_hits():
    "English model on Russian text: distances within 0.03 of each other are noise; the keyword order must win."
    vec = [(29, 0.50)] + [(i, 0.51 + i * 0.0005) for i in range(1, 29)] + [(30, 0.53)]
    kw = [(30, 10.0), (29, 9.8)] + [(i, 1.0) for i in range(1, 20)]
    cv, ck = informativeness(vec, kw)
    assert cv < 0.2 and ck > 0.8
    assert fuse_lists(vec, kw, 0.6, "adaptive", 100)[0].chunk_id == 30
    assert fuse_lists(vec, kw, 0.6, "rrf", 100)[0].chunk_id == 29  # exact RRF is left as the SPEC defines it


def test_a_flat_keyword_side_does_not_decide_between_vector_hits():
    "A common word matching many chunks equally says nothing; the vector order must win."
    vec = [(1, 0.20), (2, 0.23)] + [(i, 0.45 + i * 0.001) for i in range(3, 30)]
    kw = [(2, 5.0), (1, 4.95)] + [(i, 4.9) for i in range(3, 30)]
    assert informativeness(vec, kw)[1] < 0.1
    assert fuse_lists(vec, kw, 0.6, "adaptive", 100)[0].chunk_id == 1


def test_weight_ends_keep_their_meaning_with_informativeness():
    vec = [(i, 0.5 + i * 0.001) for i in range(30)]
    kw = [(29 - i, 10.0 - i * 0.2) for i in range(30)]
    assert effective_weight(0.0, vec, kw) == 0.0 and effective_weight(1.0, vec, kw) == 1.0
    assert [h.chunk_id for h in fuse_lists(vec, kw, 0.0)][:3] == [0, 1, 2]
    assert [h.chunk_id for h in fuse_lists(vec, kw, 1.0)][:3] == [29, 28, 27]
    assert 0 < effective_weight(0.6, vec, kw) < 1


def _words(texts) -> list[tuple[str, str]]:
    from minirag.keywords import raw_terms

    out = set()
    for t in texts:
        out.update(raw_terms(t))
    return sorted(out)


def test_query_stems_equal_the_stored_stems_word_for_word():
    """A query's words are stemmed in Python (py_rust_stemmers), postings in DuckDB (fts stem): any difference would
    lose matches."""
    import json, pyarrow as pa
    from minirag.config import Config
    from minirag.formats.convert import convert_file
    from minirag.keywords import stem_terms, STEM_SQL
    from minirag.store import connect

    data = Path(__file__).parent / "data" / "fidelity"
    texts = [
        convert_file(p, Config(ocr_min_chars=0)).markdown
        for p in sorted(data.iterdir())
        if p.suffix in (".pdf", ".epub", ".html", ".txt", ".docx", ".pptx")
    ]
    ev = (
        Path(__file__).resolve().parents[2] / "shared" / "eval"
    )  # the public eval corpora, when the checkout sits beside them
    for f in sorted(ev.glob("*/corpus.jsonl")) + sorted(ev.glob("*/queries.jsonl")):
        texts += [json.loads(l)["text"] for l in open(f, encoding="utf-8")]
    words = _words(texts)
    ru = sum(1 for _, l in words if l == "ru")
    assert ru > 3000 and len(words) - ru > 5000, (len(words), ru)
    con = connect(":memory:")
    con.register("_t", pa.table({"term": [t for t, _ in words], "lang": [l for _, l in words]}))
    stored = [r[0] for r in con.execute(f"SELECT {STEM_SQL} FROM _t").fetchall()]
    differ = [(w, l, a, b) for (w, l), a, b in zip(words, stored, stem_terms(words)) if a != b]
    assert differ == [], differ[:20]
