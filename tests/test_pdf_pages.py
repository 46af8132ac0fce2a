"""A hit from a PDF names the page its passage starts on: a printed multi-page PDF synced and queried through the
installed CLI (its hit line and `--json`) and a real MCP client over stdio, each page checked against `pdftotext`; an
index file written before chunks kept their page still answers, without one, and its next sync cuts the PDF again,
pages and all, with no chunk embedded again; a PDF fetched by URL keeps its pages too."""

import http.server, json, os, re, shutil, subprocess, threading
from pathlib import Path
import anyio
import duckdb
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from conftest import write
from test_cli import CLI, _env, cli
from test_junk import make_book_pdf
from test_lake import pg  # noqa: F401  (a fixture: a real PostgreSQL for the lake test)
from minirag.api import Index

# one subject a page, each named by words found nowhere else in the book
SUBJECTS = {
    1: "Unpacking the crate",
    2: "Greasing the walnut gearbox",
    3: "Tuning the brass carillon",
    4: "Storing the loom in winter",
}


def page_body(n: int, subject: str) -> str:
    words = subject.split()[-1].lower()
    lines = [subject]
    lines += [f"Step {k} of {words}: keep the {words} level and dry, then check it twice." for k in range(1, 12)]
    return "\n".join(lines)


def pdftotext(pdf: Path, page: int) -> str:
    "The text `pdftotext` reads on one page, its whitespace collapsed."
    out = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"], capture_output=True, text=True)
    return " ".join(out.stdout.split())


@pytest.fixture(scope="module")
def book(tmp_path_factory, model_dir):
    "A four-page printed handbook and a Markdown note, synced by the CLI: (root, env, pdf)."
    if not shutil.which("pdftotext"):
        pytest.skip("pdftotext (poppler-utils) is needed to check pages: apt-get install poppler-utils")
    root = Path(os.path.realpath(tmp_path_factory.mktemp("pages"))) / "docs"
    root.mkdir()
    pdf = make_book_pdf(
        root / "handbook.pdf", [page_body(n, s) for n, s in SUBJECTS.items()], "Workshop Handbook - Care of things"
    )
    write(root, "notes.md", "# Notes\n\nThe walnut gearbox was greased last spring.\n")
    env = _env(root, root.parent / "idx", model_dir)
    r = cli("sync", "--json", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    return root, env, pdf


def test_each_hit_from_a_pdf_names_the_page_its_words_are_on(book):
    root, env, pdf = book
    for n, subject in SUBJECTS.items():
        word = subject.split()[-1].lower()
        assert word in pdftotext(pdf, n).lower()
        assert all(word not in pdftotext(pdf, m).lower() for m in SUBJECTS if m != n)
        r = cli("query", f"{word} level and dry", "--json", "-k", "3", cwd=root, env=env)
        assert r.returncode == 0, r.stderr
        hits = [h for h in json.loads(r.stdout)["results"] if h["source"].endswith("handbook.pdf")]
        top = hits[0]
        assert top["page"] == n, (n, top)
        opening = " ".join(top["text"].split())[:40]
        assert opening in pdftotext(pdf, top["page"]), (opening, top["page"])  # the page pdftotext finds it on


def test_the_cli_hit_line_names_the_page_and_a_markdown_hit_has_none(book):
    root, env, _ = book
    r = cli("query", "carillon level and dry", "--json", "-k", "1", cwd=root, env=env)
    top = json.loads(r.stdout)["results"][0]
    assert top["page"] == 3, top
    r = cli("query", "carillon level and dry", "-k", "1", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"1. handbook.pdf · p. 3  chunk {top['chunkIndex']}  score"), r.stdout
    r = cli("query", "greased last spring", "--json", cwd=root, env=env)
    note = [h for h in json.loads(r.stdout)["results"] if h["source"].endswith("notes.md")]
    assert note and "page" not in note[0], note
    r = cli("query", "greased last spring", "-k", "8", cwd=root, env=env)
    assert re.search(r"^\d+\. notes\.md  chunk 0  score", r.stdout, re.M), r.stdout


def test_mcp_query_and_neighbors_carry_the_page(book):
    root, env, pdf = book

    async def main():
        async with Client(
            StdioServerParameters(command=CLI, args=[], env=env), mode="auto", read_timeout_seconds=120
        ) as c:
            q = await c.call_tool("query_documents", {"query": "loom level and dry", "topK": 1})
            top = q.structured_content["results"][0]
            n = await c.call_tool(
                "read_chunk_neighbors", {"filePath": top["source"], "chunkIndex": top["chunkIndex"], "before": 1}
            )
            return q, n

    q, n = anyio.run(main)
    top = q.structured_content["results"][0]
    assert top["source"].endswith("handbook.pdf") and top["page"] in (3, 4), top  # page 4, or a chunk that ends there
    assert " ".join(top["text"].split())[:40] in pdftotext(pdf, top["page"]), top
    chunks = n.structured_content["chunks"]
    assert [c["page"] for c in chunks if c["isTarget"]] == [top["page"]], chunks
    for c in chunks:
        assert " ".join(c["text"].split())[:40] in pdftotext(pdf, c["page"]), c


def test_an_index_written_before_pages_still_answers(book, tmp_path):
    root, env, _ = book
    db = Path(env["DB_PATH"])
    old = tmp_path / "old-idx"
    shutil.copytree(db, old)
    con = duckdb.connect(str(old / "index.duckdb"))
    con.execute("DROP INDEX IF EXISTS chunks_id")  # DuckDB drops no column an index depends on
    con.execute("DROP INDEX IF EXISTS chunks_source")
    con.execute("ALTER TABLE chunks DROP COLUMN page")  # as the version before wrote it
    con.close()
    r = cli("query", "brass carillon", "--json", "-k", "1", cwd=root, env=dict(env, DB_PATH=str(old)))
    assert r.returncode == 0, r.stderr
    top = json.loads(r.stdout)["results"][0]
    assert top["source"].endswith("handbook.pdf") and "page" not in top, top


def test_a_lake_keeps_pages_and_one_laid_out_before_them_gains_them_at_the_next_sync(pg, tmp_path, model_dir, root):
    from test_lake import cli as lake_cli, lake_env
    from minirag.config import load_config
    from minirag.engine import Engine

    pg.lake_url = pg.new_database()
    env = lake_env(pg, tmp_path, model_dir, root)
    pdf = make_book_pdf(root / "handbook.pdf", [page_body(n, s) for n, s in SUBJECTS.items()], "Workshop Handbook")
    assert json.loads(lake_cli(env, "sync", "--json").stdout)["ingested"] == 1

    def top() -> dict:
        return json.loads(lake_cli(env, "query", "carillon level and dry", "--json", "-k", "1").stdout)["results"][0]

    hit = top()
    assert hit["page"] == 3 and " ".join(hit["text"].split())[:40] in pdftotext(pdf, 3), hit
    eng = Engine(load_config(env=env))
    with eng.store.transaction() as con:
        con.execute("ALTER TABLE chunks DROP COLUMN page")  # the lake as the version before laid it out
    eng.store.close()
    assert "page" not in top()  # opened, laid out again: the column is back, empty
    assert json.loads(lake_cli(env, "sync", "--json").stdout)["ingested"] == 1  # the next sync cuts the PDF again
    assert top()["page"] == 3


def _pages(ix: Index, source: str) -> list:
    return [c["page"] for c in ix.tables.chunks_of(source)]


def test_a_pdf_indexed_before_pages_gets_them_at_the_next_sync_without_embedding(root, model_dir, shared_embedder):
    pdf = make_book_pdf(root / "handbook.pdf", [page_body(n, s) for n, s in SUBJECTS.items()], "Workshop Handbook")
    write(root, "notes.md", "# Notes\n\nThe walnut gearbox was greased last spring.\n")
    opened = dict(model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder)
    ix = Index.open(root, **opened)
    assert ix.sync().ingested == 2
    pages, db = _pages(ix, str(pdf)), ix.cfg.db_file
    assert set(pages) == {1, 2, 3, 4} and pages == sorted(pages), pages
    ix.close()
    con = duckdb.connect(str(db))  # the file as the version before pages left it: its chunks have none
    con.execute("UPDATE chunks SET page = NULL")
    con.close()
    ix = Index.open(root, **opened)
    assert set(_pages(ix, str(pdf))) == {None}
    assert ix.tables.unpaged((".pdf",)) == [str(pdf)]
    calls = shared_embedder.calls
    report = ix.sync()
    assert (report.ingested, report.skipped, report.failed) == (1, 1, 0), report  # the PDF cut again, notes.md not
    assert shared_embedder.calls == calls  # every chunk's text unchanged: every vector reused, none embedded
    assert _pages(ix, str(pdf)) == pages
    assert ix.query("carillon level and dry", top_k=1).hits[0].page == 3
    assert ix.sync().ingested == 0  # done once: the next sync skips it
    ix.close()


class _PdfServer(http.server.BaseHTTPRequestHandler):
    body = b""

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/pdf")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def test_a_pdf_fetched_by_url_keeps_its_pages(root, tmp_path, model_dir, shared_embedder):
    pdf = make_book_pdf(tmp_path / "served.pdf", [page_body(n, s) for n, s in SUBJECTS.items()], "Workshop Handbook")
    handler = type("Served", (_PdfServer,), {"body": pdf.read_bytes()})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/handbook.pdf"
    env = {"ALLOW_PRIVATE_URLS": "1"}
    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder, env=env)
    try:
        ix.ingest_url(url)
        pages = _pages(ix, url)
        assert set(pages) == {1, 2, 3, 4} and pages == sorted(pages), pages
        hit = ix.query("carillon level and dry", top_k=1).hits[0]
        assert (hit.source, hit.page) == (url, 3), hit
        assert ix.query("carillon level and dry", top_k=1).to_df().page.tolist() == [3]
    finally:
        ix.close()
        srv.shutdown()
        srv.server_close()
