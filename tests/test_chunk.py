"Chunker behaviour a notebook cannot show: every budget, hostile input, big input, property checks (R-C1..R-C10, R-I3)."

import re
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

from minirag.chunk import (
    CODE_SPLIT_MARK,
    SECTION_CAP,
    CODE_BUDGETS,
    CHARS_PER_TOKEN_CAP,
    chunk_markdown,
    detect_category,
    rebuild_document,
    rebuild_section,
    table_header,
)
from minirag.tidy import strip_inline_images

ASSETS = Path(__file__).parents[1] / "minirag" / "assets" / "all-MiniLM-L6-v2" / "tokenizer.json"
DATA = Path(__file__).parent / "data" / "chunking"


def _make_count():
    try:
        from minirag.tokens import TokenCounter

        return TokenCounter(ASSETS).count
    except ImportError:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(ASSETS))
        tok.no_truncation()
        tok.no_padding()
        return lambda s: len(tok.encode(s, add_special_tokens=False).ids)


count = _make_count()
norm = lambda s: " ".join(s.split())


@pytest.fixture(scope="module")
def corpus():
    from markitdown import MarkItDown

    md = MarkItDown()
    return {
        p.name: md.convert(p).markdown for p in sorted(DATA.iterdir()) if p.suffix in (".md", ".txt", ".docx", ".pptx")
    }


def check_budget(doc, budget):
    for c in doc.chunks:
        assert c.text.strip(), c
        assert 0 <= c.prefix_len <= len(c.text)
        assert c.tokens == count(c.text)
        if c.kind == "code":
            assert c.tokens <= CODE_BUDGETS * budget
        else:
            assert c.tokens <= budget, (c.kind, c.tokens, c.text[:200])
    ids = [int(c.parent_id) for c in doc.chunks]
    assert ids == sorted(ids) and (not ids or set(ids) == set(range(ids[-1] + 1)))


def without_labels(s):
    return re.sub(r"\[\d\d:\d\d–\d\d:\d\d\][^\n]*", "", s)


@pytest.mark.parametrize("budget", [16, 32, 64, 110, 128])
def test_fixture_corpus_budget_and_rebuild(corpus, budget):
    for name, md in corpus.items():
        doc = chunk_markdown(md, count, budget)
        check_budget(doc, budget)
        rebuilt = rebuild_document(doc.chunks)
        if doc.category == "transcript":
            assert norm(without_labels(rebuilt)) == norm(md), name
        else:
            assert norm(rebuilt) == norm(md), name
        for pid, sec in doc.sections().items():
            assert len(sec) <= SECTION_CAP, (name, pid, len(sec))


def test_categories(corpus):
    got = {n: detect_category(md) for n, md in corpus.items()}
    assert got["transcript_meeting.docx"] == got["transcript_call.md"] == "transcript"
    assert got["slides_review.pptx"] == "slides"
    assert got["spec_nested.md"] == got["russian_regulation.md"] == "headings"
    assert got["notes_plain.txt"] == "generic"


@pytest.mark.parametrize(
    "fmt", ["{ts} Alice: {t}", "[{ms}] Bob: {t}", "{ms} {t}", "**{ts}** Chen\n\n{t}", "({ms}) Dana: {t}"]
)
def test_transcript_formats(fmt):
    lines = []
    for i in range(20):
        s = 13 + i * 25
        lines.append(
            fmt.format(
                ts=f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}",
                ms=f"{s // 60:02d}:{s % 60:02d}",
                t=f"point number {i} about the budget",
            )
        )
    md = "\n\n".join(lines)
    doc = chunk_markdown(md, count, 64, title="Budget sync")
    assert doc.category == "transcript"
    heads = sorted({c.section_head for c in doc.chunks})
    assert heads[0] == "[00:00–02:00] Budget sync" and "[06:00–08:00] Budget sync" in heads
    assert all(c.text.startswith(c.section_head + "\n") for c in doc.chunks)
    assert norm(without_labels(rebuild_document(doc.chunks))) == norm(md)


def test_time_mentions_do_not_make_a_transcript():
    md = "Opening hours\n\n09:00 doors open\n\nWe serve lunch from 12:00.\n\n" + "\n\n".join(
        f"Paragraph {i} of prose." for i in range(10)
    )
    assert detect_category(md) == "generic"


def test_slides_split_only_when_over_budget(corpus):
    doc = chunk_markdown(corpus["slides_review.pptx"], count, 110)
    per = {}
    for c in doc.chunks:
        per.setdefault(c.section_head, []).append(c)
    assert len(per) == 4 and len(per["<!-- Slide number: 3 -->"]) > 1
    assert all(len(v) == 1 for k, v in per.items() if k != "<!-- Slide number: 3 -->")


def test_breadcrumb_elided_and_capped():
    names = [
        "1 General provisions for the whole company",
        "2 Storage of goods in every warehouse we run",
        "3 Procedures for approvals and sign-off of locations",
        "3.4 Approval of locations",
        "3.4.2 Approval",
    ]
    md = (
        "".join(f"{'#' * (i + 1)} {h}\n\n" for i, h in enumerate(names))
        + "Body text of the innermost section.\n\n## Sibling\n\nMore.\n"
    )
    for budget in (16, 48, 110):
        doc = chunk_markdown(md, count, budget)
        check_budget(doc, budget)
        first = doc.chunks[0]
        crumb = first.text[: first.prefix_len].rstrip("\n")
        assert count(crumb) <= budget // 3
        if budget == 48:
            assert crumb.startswith("1 General provisions") is False or "…" in crumb
            assert crumb.endswith("3.4.2 Approval") and "…" in crumb


def test_breadcrumb_keeps_outermost_and_innermost():
    md = (
        "# 1 General\n\n## 2 Middle heading with many words in it\n\n### 3 Another long middle heading here\n\n"
        "#### 3.4 Approval\n\n##### 3.4.2 Approval\n\nText.\n\n# Other\n\nx\n"
    )
    doc = chunk_markdown(md, count, 48)
    crumb = doc.chunks[0].text[: doc.chunks[0].prefix_len].rstrip()
    assert crumb.startswith("1 General > … > ") and crumb.endswith("3.4.2 Approval")


def test_heading_without_body_or_child_is_a_chunk():
    md = "# Doc\n\nIntro.\n\n## Empty\n\n## Full\n\nText.\n\n### Child\n\nMore.\n"
    doc = chunk_markdown(md, count, 64)
    heads = [c for c in doc.chunks if c.kind == "heading"]
    assert [c.text for c in heads] == ["Doc > Empty"] and heads[0].section_head == "## Empty"
    assert norm(rebuild_document(doc.chunks)) == norm(md)


def test_code_block_atomic_up_to_four_budgets_then_split():
    budget = 32
    lines = [f"call_step({i}, retries={i})" for i in range(200)]

    def block(n):
        return "```python\n" + "\n".join(lines[:n]) + "\n```"

    n_ok = max(n for n in range(1, 200) if count("Code\n" + block(n)) <= CODE_BUDGETS * budget)
    md_ok = "# Code\n\n" + block(n_ok) + "\n\n# Next\n\nText."
    doc = chunk_markdown(md_ok, count, budget)
    code = [c for c in doc.chunks if c.kind.startswith("code")]
    assert len(code) == 1 and code[0].kind == "code" and code[0].tokens > budget
    md_big = "# Code\n\n" + block(n_ok + 5) + "\n\n# Next\n\nText."
    doc = chunk_markdown(md_big, count, budget)
    parts = [c for c in doc.chunks if c.kind == "code_part"]
    assert len(parts) > 4 and all(
        c.body.startswith(CODE_SPLIT_MARK + "\n") and c.tokens <= budget for c in parts
    )  # read with the marker
    assert all(c.body.endswith("\n") or c.body.endswith("```") for c in parts)  # cut at line boundaries
    assert block(n_ok + 5) in rebuild_document(doc.chunks)  # marker gone, one block again
    check_budget(doc, budget)


def test_unclosed_fence_does_not_swallow_the_document():
    md = (
        "# A\n\n```bash\necho start\n\n"
        + "\n\n".join(f"Paragraph {i} explains the step in words." * 3 for i in range(40))
        + "\n\n# B\n\nEnd."
    )
    doc = chunk_markdown(md, count, 32)
    assert all(c.kind != "code" for c in doc.chunks)
    check_budget(doc, 32)
    assert doc.chunks[-1].section_head == "# B"


def table(rows, cols=3, cell="value"):
    head = "| " + " | ".join(f"Col{i}" for i in range(cols)) + " |\n| " + " | ".join(["---"] * cols) + " |\n"
    return head + "".join("| " + " | ".join(f"{cell} {r}.{c}" for c in range(cols)) + " |\n" for r in range(rows))


def test_thirty_row_table_reads_back_as_one_table():
    md = "# Prices\n\nIntro.\n\n## List\n\n" + table(30) + "\nAfter the table.\n"
    doc = chunk_markdown(md, count, 48)
    tchunks = [c for c in doc.chunks if c.kind == "table"]
    assert len(tchunks) > 3
    hdr = "| Col0 | Col1 | Col2 |\n| --- | --- | --- |\n"
    assert all(
        c.body.startswith(hdr) and c.body.count("| Col0 |") == 1 for c in tchunks
    )  # each reads with its header, once
    for text in (
        rebuild_document(doc.chunks),
        rebuild_section([c for c in doc.chunks if c.parent_id == tchunks[0].parent_id]),
    ):
        assert text.count("| Col0 |") == 1 and text.count("| --- | --- | --- |") == 1
        assert "\n".join(f"| value {r}.0 | value {r}.1 | value {r}.2 |" for r in range(30)) in text
    assert norm(rebuild_document(doc.chunks)) == norm(md)


def test_table_over_section_cap_repeats_header_per_section():
    md = "# T\n\nx\n\n## Big\n\n" + table(300) + "\n## End\n\nDone.\n"
    doc = chunk_markdown(md, count, 110)
    secs = doc.sections()
    tsecs = [s for s in secs.values() if "| value" in s]
    assert len(tsecs) > 1 and all(s.count("| Col0 | Col1 | Col2 |") == 1 and len(s) <= SECTION_CAP for s in tsecs)
    whole = rebuild_document(doc.chunks)
    assert whole.count("| Col0 |") == 1 and whole.count("## Big") == 1
    assert norm(whole) == norm(md)


def test_long_row_split_at_whitespace_section_keeps_it_whole():
    long_cell = " ".join(f"word{i}" for i in range(200))
    md = (
        "# T\n\nx\n\n## Rows\n\n| a | b |\n| --- | --- |\n| short | row |\n| "
        + long_cell
        + " | end |\n| last | row |\n"
    )
    doc = chunk_markdown(md, count, 32)
    check_budget(doc, 32)
    pieces = [c for c in doc.chunks if c.kind == "table" and "word" in c.body]
    assert len(pieces) > 3 and all(c.body.startswith("| a | b |\n| --- | --- |\n") for c in pieces)
    sec = rebuild_section([c for c in doc.chunks if c.parent_id == pieces[0].parent_id])
    assert "| " + long_cell + " | end |" in sec and sec.count("| a | b |") == 1


def test_header_written_once_and_glued_tables_rebuild_exactly():
    "A header too wide to repeat is a row of the first chunk only; a later chunk that opens on a copy of it is text."
    glued = 0
    for cols in (2, 3, 5):
        wide = "| " + " | ".join(f"Column number {i}" for i in range(cols)) + " |\n|" + " --- |" * cols + "\n"
        for nrows in (0, 1, 6):
            rows = "".join("| " + " | ".join(f"v{r}" for _ in range(cols)) + " |\n" for r in range(nrows))
            for md in (
                "# W\n\nx\n\n## Wide\n\n" + wide + rows + wide + rows + "\nEnd.\n",  # two tables glued together
                "# W\n\nx\n\n## Wide\n\n" + wide + rows + "\nEnd.\n",
            ):
                for budget in (24, 32, 40, 48, 64):
                    doc = chunk_markdown(md, count, budget)
                    check_budget(doc, budget)
                    assert rebuild_document(doc.chunks) == md.rstrip(), (cols, nrows, budget)
                    glued += sum(c.kind == "text" and table_header(c.body) == wide for c in doc.chunks)
    assert glued  # some chunk did open on the glued copy, and it was kept


def test_rebuild_reads_chunks_cut_before_the_header_moved_into_the_body():
    "An index not yet re-cut keeps the repeated header in the prefix and the marker before `prefix_len`."
    md = (
        "# Prices\n\nIntro.\n\n## List\n\n"
        + table(30)
        + "\n## Code\n\n```py\n"
        + "\n".join(f"x_{i} = {i}" for i in range(90))
        + "\n```\n"
    )
    doc = chunk_markdown(md, count, 32)
    old = []
    for c in map(asdict, doc.chunks):
        h = table_header(c["text"][c["prefix_len"] :]) if c["kind"] == "table" else ""
        m = CODE_SPLIT_MARK + "\n" if c["kind"] == "code_part" else ""
        old.append(dict(c, prefix_len=c["prefix_len"] + len(h) + len(m)))
    assert sum(c["kind"] == "code_part" for c in old) > 2 and sum(c["kind"] == "table" for c in old) > 2
    assert rebuild_document(old) == rebuild_document(doc.chunks) == md.rstrip()


def test_header_only_table_is_content():
    md = "# A\n\nx\n\n## Empty table\n\n| Only | Header |\n| --- | --- |\n"
    doc = chunk_markdown(md, count, 64)
    c = [c for c in doc.chunks if "Only" in c.text]
    assert len(c) == 1 and "| Only | Header |" in c[0].body


def test_long_paragraph_cut_at_sentences_for_sections():
    para = " ".join(f"Sentence number {i} says something about stock." for i in range(300))
    doc = chunk_markdown(para, count, 64)
    secs = list(doc.sections().values())
    assert len(secs) > 3 and all(len(s) <= SECTION_CAP for s in secs)
    assert all(s.rstrip().endswith("stock.") for s in secs)
    assert rebuild_document(doc.chunks) == para


def test_single_huge_sentence_is_the_only_soft_case():
    sent = " ".join(f"clause{i}" for i in range(900)) + "."  # ~8 KB, no sentence boundary
    doc = chunk_markdown("Before.\n\n" + sent + "\n\nAfter.", count, 64)
    check_budget(doc, 64)
    assert max(len(s) for s in doc.sections().values()) > SECTION_CAP  # kept whole in its section
    assert sent in rebuild_document(doc.chunks)


def test_unbroken_20kb_line_is_cut_to_budget():
    line = "x" * 20_000
    for budget in (16, 110):
        doc = chunk_markdown(line, count, budget)
        check_budget(doc, budget)
        assert len(doc.chunks) > 1 and all(len(c.text) <= budget * CHARS_PER_TOKEN_CAP for c in doc.chunks)
        assert rebuild_document(doc.chunks) == line
    mixed = "".join(chr(0x430 + i % 32) + str(i % 10) for i in range(10_000))
    doc = chunk_markdown(mixed, count, 32)
    check_budget(doc, 32)
    assert rebuild_document(doc.chunks) == mixed


def test_non_additive_counter_still_respects_budget():
    def odd(s):
        return len(s.split()) + 3 * s.count("\n") + (5 if len(s) > 200 else 0)

    md = "# A\n\n" + "\n".join(f"line {i} with words" for i in range(200)) + "\n\n" + table(40)
    doc = chunk_markdown(md, odd, 32)
    assert all(odd(c.text) <= 32 for c in doc.chunks)
    assert norm(rebuild_document(doc.chunks)) == norm(md)


def test_title_reserve_and_prepended_title_rebuild(corpus):
    title = "Warehouse operations specification"
    doc = chunk_markdown(corpus["spec_nested.md"], count, 48, title=title)
    rows = [asdict(c) for c in doc.chunks]
    line = f"# {title}\n\n"
    rows[0]["text"] = line + rows[0]["text"]
    rows[0]["prefix_len"] += len(line)
    assert count(rows[0]["text"]) <= 48
    assert rebuild_document(rows) == rebuild_document(doc.chunks)
    first = [r for r in rows if r["parent_id"] == rows[0]["parent_id"]]
    assert rebuild_section(first) == rebuild_section([c for c in doc.chunks if c.parent_id == rows[0]["parent_id"]])
    # the same with a table chunk first
    t = chunk_markdown(table(20), count, 32)
    rows = [asdict(c) for c in t.chunks]
    rows[0]["text"] = "# Tab\n\n" + rows[0]["text"]
    rows[0]["prefix_len"] += len("# Tab\n\n")
    assert rebuild_document(rows) == table(20).rstrip()


def test_strip_inline_images():
    b64 = "iVBORw0KGgoAAAANSUhEUgAA" * 50
    md = (
        f"Intro ![Floor plan](data:image/png;base64,{b64}) text.\n![](data:image/jpeg;base64,{b64})\n"
        f"![chart](charts/q1.png) ![web](https://example.org/a.png)\n\n```md\n![kept](data:image/png;base64,{b64})\n```\n"
        f'After ![Logo](data:image/svg+xml;base64,{b64} "title").\n'
    )
    out = strip_inline_images(md)
    assert "Intro Floor plan text." in out and "After Logo." in out
    assert "![chart](charts/q1.png)" in out and "![web](https://example.org/a.png)" in out
    assert out.count("data:image") == 1 and f"![kept](data:image/png;base64,{b64})" in out
    doc = chunk_markdown(md, count, 110)
    assert sum(c.text.count("base64") for c in doc.chunks) == 1


def test_bad_budget_is_a_clear_error():
    with pytest.raises(ValueError, match="CHUNK_TOKEN_BUDGET"):
        chunk_markdown("x", count, 4)


def test_counting_is_linear_not_quadratic():
    "R-C10: characters handed to the tokenizer stay a small multiple of the input."
    seen = [0]

    def counting(s):
        seen[0] += len(s)
        return count(s)

    para = " ".join(f"Sentence {i} about pallets and zones." for i in range(6000))
    rows = table(3000)
    for md in (para, rows, "y" * 50_000):
        seen[0] = 0
        doc = chunk_markdown(md, counting, 110)
        assert doc.chunks and seen[0] < 6 * len(md), (len(md), seen[0])


# --- property test: any mix of blocks keeps the budget and rebuilds to the same text ---
words = st.sampled_from(
    [
        "stock",
        "pallet",
        "zone",
        "Москва",
        "склад",
        "ERR_CONNECTION_REFUSED",
        "x" * 150,
        "3.14",
        "approve.",
        "end!",
        "—",
        "(see)",
        "a|b",
    ]
)
sentence = st.lists(words, min_size=1, max_size=60).map(" ".join)
para = st.lists(sentence, min_size=1, max_size=8).map(lambda s: " ".join(s) + ".")


def _table(rows):
    return table(rows[0], rows[1])


block = st.one_of(
    para,
    para,
    st.tuples(st.integers(1, 6), sentence).map(lambda t: "#" * t[0] + " " + t[1][:80]),
    st.tuples(st.integers(0, 25), st.integers(1, 4)).map(_table),
    st.lists(sentence, min_size=1, max_size=40).map(lambda ls: "```\n" + "\n".join(ls) + "\n```"),
    st.just("```python\nnever closed"),
    st.lists(sentence, min_size=1, max_size=5).map(lambda ls: "\n".join("- " + s for s in ls)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(block, min_size=1, max_size=12), st.sampled_from([16, 40, 110]))
def test_property_budget_and_rebuild(blocks, budget):
    md = "\n\n".join(blocks)
    doc = chunk_markdown(md, count, budget)
    check_budget(doc, budget)
    assert norm(rebuild_document(doc.chunks)) == norm(md)
