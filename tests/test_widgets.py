"frames (DataFrame column contracts, Index.query/chunks/sources) and the explorers, driven headless on a real index."

import pytest
from minirag.config import MiniragError
from minirag.frames import RESULT_COLUMNS, CHUNK_COLUMNS, SOURCE_COLUMNS, QueryResult
from minirag.widgets import ChunkExplorer, SearchExplorer, SEARCH_VIEW_COLUMNS, split_labels
from conftest import write
from minirag.wire import to_wire


def test_column_contracts_are_stable():
    assert RESULT_COLUMNS == [
        "rank",
        "display_path",
        "title",
        "chunk_index",
        "section",
        "score",
        "distance",
        "vector_rank",
        "keyword_rank",
        "text",
        "source",
        "parent_id",
        "page",
    ]
    assert CHUNK_COLUMNS == [
        "chunk_index",
        "parent_id",
        "kind",
        "tokens",
        "budget_share",
        "prefix_len",
        "section_head",
        "text",
    ]
    assert SOURCE_COLUMNS == [
        "display_path",
        "kind",
        "title",
        "category",
        "chunk_count",
        "size",
        "ocr_engine",
        "scheme",
        "ingested_at",
        "source",
    ]
    empty = QueryResult("").to_df()
    assert list(empty.columns) == RESULT_COLUMNS and len(empty) == 0


@pytest.fixture
def filled(index, root):
    write(
        root,
        "net/errors.md",
        "# Network errors\n\n## Refused\n\nERR_CONNECTION_REFUSED means nothing listens on the port.\n\n"
        "## Timeouts\n\nA timeout means the host did not answer at all.\n",
    )
    rows = "\n".join(f"| SKU-{i} | pallet wrap batch {i} | zone B{i % 9} | {i * 7} |" for i in range(60))
    write(
        root,
        "stock.md",
        "# Stock\n\n## Inventory\n\n| SKU | Description | Zone | Qty |\n|---|---|---|---|\n" + rows + "\n",
    )
    for f in ("net/errors.md", "stock.md"):
        to_wire(index.ingest(root / f))
    to_wire(index.ingest_data("Error E-1042 pages the storage engineer.", source="notes/oncall", title="On-call"))
    return index


def test_search_frame_types_and_values(filled, root):
    qr = filled.query("ERR_CONNECTION_REFUSED", top_k=5)
    df = qr.to_df()
    assert list(df.columns) == RESULT_COLUMNS
    assert df.display_path[0] == "net/errors.md" and df.section[0] == "Network errors › Refused"
    assert str(df.vector_rank.dtype) == "Int64" and df.distance.dtype == "float64"
    assert df["rank"].tolist() == list(range(len(df)))
    assert df.source[0] == str(root / "net/errors.md") and df.parent_id[0].startswith(df.source[0] + "#")
    kw = filled.query("ERR_CONNECTION_REFUSED", weight=1).to_df()
    assert kw.distance.isna().all() and kw.vector_rank.isna().all()
    assert "network" not in qr._repr_markdown_().lower() or "net/errors.md" in qr._repr_markdown_()
    assert str(root) not in qr._repr_html_() and str(root) not in qr._repr_markdown_()  # reprs show display paths
    assert qr.sources_df().hits.sum() == len(qr)


def test_chunks_and_sources_frames(filled, root):
    src = filled.sources().to_df()
    assert list(src.columns) == SOURCE_COLUMNS
    assert sorted(src.display_path) == ["net/errors.md", "notes/oncall", "stock.md"]
    ct = filled.chunks("stock.md")
    df = ct.to_df()
    assert list(df.columns) == CHUNK_COLUMNS and len(df) > 3 and set(df.kind) == {"table"}
    assert (df.budget_share == (df.tokens / filled.cfg.chunk_token_budget).round(3)).all()
    assert df.chunk_index.tolist() == list(range(len(df)))
    assert filled.chunks(root / "stock.md").source == filled.chunks(str(root / "stock.md")).source == ct.source
    assert filled.chunks("notes/oncall").category
    with pytest.raises(MiniragError, match="not in the index"):
        filled.chunks("nope.md")
    labels = split_labels(ct.rows)
    assert labels[0] == f"table 1/{len(ct)}" and labels[-1] == f"table {len(ct)}/{len(ct)}"


def test_chunk_explorer_headless(filled):
    ce = ChunkExplorer(filled, "net/errors.md")
    assert "Refused" in ce.view.value and "Timeouts" in ce.view.value and "category <b>headings</b>" in ce.view.value
    pid = ce.sections.parent_id[ce.sections.breadcrumb.str.endswith("Timeouts")].iloc[0]
    ce.section.value = pid
    assert "Timeouts" in ce.view.value and "Refused" not in ce.view.value
    ce.doc.value = filled.chunks("stock.md").source
    assert ce.section.value == "" and "✂ table 1/" in ce.view.value


def test_chunk_explorer_on_empty_index(index):
    assert "empty" in ChunkExplorer(index).view.value


def test_search_explorer_headless(filled):
    se = SearchExplorer(filled)
    assert se.df.empty and "Type a query" in (se.view.value or "Type a query")
    se.query.value = "ERR_CONNECTION_REFUSED"
    se.button.click()
    assert list(se.df.columns) == SEARCH_VIEW_COLUMNS and se.df.display_path[0] == "net/errors.md"
    before = se.view.value
    se.weight.value = 0.0
    assert se.df.keyword_rank.isna().all() and se.view.value != before
    se.weight.value = 1.0
    assert se.df.distance.isna().all() and "<td>–</td>" in se.view.value
    se.top_k.value = 1
    assert len(se.df) == 1
    se.query.value = "x" * 5000  # an error is shown, not raised
    assert "limit is" in se.view.value and "mr-error" in se.view.value
