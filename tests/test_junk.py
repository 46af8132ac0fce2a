"""No junk in the index: real manual pages, a printed PDF and a Word report synced by the real pipeline (DuckDB, the
packaged model) leave no chunk without words, no navigation line, no dot leader, no running head, no empty table
header; a DOCX's Title paragraph names it."""

import re, shutil
from pathlib import Path
import pytest
from test_security import write_pdf

DATA = Path(__file__).parent / "data"
MIN_LETTERS = 12


def make_book_pdf(path: Path, pages: list[str], head: str) -> Path:
    "A PDF of several pages, each with a running head, its body lines and its page number at the foot."
    n = len(pages)
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None]
    kids = []
    for i, body in enumerate(pages, 1):
        lines = [(head, 760), *[(line, 700 - 16 * k) for k, line in enumerate(body.splitlines())], (str(i), 40)]
        content = " ".join(f"BT /F1 11 Tf 72 {y} Td ({t}) Tj ET" for t, y in lines).encode("latin-1")
        page_no = len(objs) + 1
        kids.append(page_no)
        objs.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (page_no + 1, 3 + 2 * n)
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), n)
    return write_pdf(path, objs)


def synced(index, root: Path) -> dict:
    "{file name: (title, [chunk rows])} after a sync of `root`."
    r = index.sync()
    assert not r.failed, r
    tables = index.engine.tables
    return {Path(s["source"]).name: (s["title"], tables.chunks_of(s["source"])) for s in tables.sources()}


def body(c: dict) -> str:
    return c["text"] if c["kind"] == "heading" else c["text"][c["prefix_len"] :]


def junk(chunks: list) -> list:
    "Bodies a reader would call junk: under 12 letters (a table or code chunk of figures or a command is content)."
    return [
        body(c)
        for c in chunks
        if sum(ch.isalpha() for ch in body(c)) < MIN_LETTERS and c["kind"] not in ("code", "table")
    ]


def test_old_html_manuals_leave_no_junk(root, index):
    for name in ("aptitude-ch01s01s04.html", "texinfo-A4-Paper.html", "texinfo-Footnote-Styles.html",
                 "texinfo-Printing.html"):  # fmt: skip
        shutil.copy(DATA / "junk" / name, root / name)
    docs = synced(index, root)
    for name, (title, chunks) in docs.items():
        assert chunks, name
        assert junk(chunks) == [], name
        text = "\n".join(body(c) for c in chunks)
        assert "[Contents][Index]" not in text and not re.search(r"(?m)^Next: ", text), name
        assert "¶" not in text, name  # texinfo's hidden copy-the-link anchors
        assert not re.search(r"(?m)^\|(\s*\|)+\s*$", text), name  # no empty table row or header
    tip = " ".join("\n".join(body(c) for c in docs["aptitude-ch01s01s04.html"][1]).split())
    assert "Tip You can only change your system's setup as the `root` user." in tip  # the layout table, as text
    assert docs["texinfo-A4-Paper.html"][0] == "A4 Paper (GNU Texinfo 6.8)"


def test_printed_pdf_loses_leaders_heads_and_page_numbers(root, index):
    shutil.copy(DATA / "fidelity" / "debian-faq.en.pdf", root / "faq.pdf")
    bodies = [
        "Gears turn the main shaft of the widget.\nEach gear is cut from hardened steel.",
        "Springs return the lever to rest.\nA weak spring makes the lever stick.",
        "Bearings carry the shaft.\nGrease them every thousand hours of running.",
        "Housings keep the dust out.\nSeal every joint with the gasket supplied.",
    ]
    make_book_pdf(root / "handbook.pdf", bodies, "Widget Handbook - Chapter 2: Moving parts")
    docs = synced(index, root)
    for name, (_, chunks) in docs.items():
        assert junk(chunks) == [], name
        lines = [l.strip() for c in chunks for l in body(c).splitlines()]
        assert not [l for l in lines if re.search(r"(?:\.\s?){4,}\s*\d+$", l)], name  # no dot leaders
    text = "\n".join(body(c) for c in docs["handbook.pdf"][1])
    assert "Widget Handbook" not in text
    assert not re.search(r"(?m)^\s*\d+\s*$", text)  # no page numbers
    assert all(b.splitlines()[0] in text for b in bodies)
    faq = "\n".join(body(c) for c in docs["faq.pdf"][1])
    assert "What is this FAQ?" in faq  # the section itself stays; only its contents line went


def test_docx_title_paragraph_names_it_and_its_table_has_a_header(root, index):
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_paragraph("Annual Report on Widgets", style="Title")
    d.add_heading("Background", 1)
    d.add_paragraph("Widget sales grew in every region this year, led by the northern depots.")
    t = d.add_table(rows=3, cols=2)
    for i, row in enumerate([("Depot", "Widgets sold"), ("North", "1200"), ("South", "800")]):
        t.cell(i, 0).text, t.cell(i, 1).text = row
    d.save(root / "report.docx")
    title, chunks = synced(index, root)["report.docx"]
    assert title == "Annual Report on Widgets"
    assert junk(chunks) == []
    table = next(c for c in chunks if c["kind"] == "table")
    assert body(table).startswith("| Depot | Widgets sold |\n| --- | --- |\n| North | 1200 |")


def test_every_chunk_of_a_sheet_of_figures_carries_its_table_name_and_column_names(root, index):
    "Rows of bare numbers are found by nothing else: a CSV's chunks are named by its title, a lone sheet by its name."
    lines = (DATA / "fidelity/challenge.csv").read_text().splitlines(keepends=True)
    (root / "challenge.csv").write_text("".join(lines[:200] + lines[1001:1200]))  # its numbers, then its dates
    shutil.copyfile(DATA / "office/pythagoras.ods", root / "pythagoras.ods")
    from minirag.chunk import table_header

    got = synced(index, root)
    for name, table in (("challenge.csv", "challenge"), ("pythagoras.ods", "Sheet1")):
        chunks = got[name][1]
        assert not junk(chunks), (name, junk(chunks))  # not a `## Sheet1` chunk alone
        tables = [c for c in chunks if c["kind"] == "table"]
        assert len(tables) == len(chunks), [c["kind"] for c in chunks]
        unnamed = [c["text"][:60] for c in tables if table not in c["text"][: c["prefix_len"]]]
        assert not unnamed, (name, len(unnamed), unnamed[:3])
        assert all(table_header(body(c)) for c in tables), name


def alnum(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def test_a_list_heading_or_a_sentence_tail_does_not_stand_alone(tmp_path):
    "Too big to join a full neighbour, a thin prose chunk takes the last lines, sentences or words of it instead."
    import minirag
    from minirag.config import load_config
    from minirag.formats.convert import convert_file
    from minirag.chunk import chunk_markdown, rebuild_document
    from minirag.tokens import TokenCounter

    count = TokenCounter(Path(minirag.__file__).parent / "assets/all-MiniLM-L6-v2/tokenizer.json").count
    news = Path("/usr/share/doc/coreutils/NEWS.gz")  # its '** Bug fixes' lines, each before a long list
    book = DATA / "fidelity/developers-reference.ru.epub"  # long Russian sentences cut at a word by the budget
    for path, budgets in ((news, (64, 110, 128)), (book, (110,))):
        if not path.is_file():
            continue  # NEWS.gz: Debian's /usr/share/doc, not on every system
        md = convert_file(path, load_config({"BASE_DIR": str(tmp_path)})).markdown
        for budget in budgets:
            chunks = chunk_markdown(md, count, budget, path.stem).chunks
            thin = [c.body for c in chunks if c.kind != "heading" and sum(ch.isalpha() for ch in c.body) < MIN_LETTERS]
            assert not thin, (path.name, budget, thin)
            assert all(c.tokens <= budget for c in chunks if c.kind == "text"), (path.name, budget)
            assert alnum(rebuild_document(chunks)) == alnum(md), (path.name, budget)  # every word kept, in order
