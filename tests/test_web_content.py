"""HTML that is not a file takes the files' path: `ingest_data(format="html")` and `ingest_url` keep a page's main
content with its links as their text, a URL serving a spreadsheet is read by the workbook reader without pandas, and a
document of blank tables makes no chunk. Driven through the Index API against a real loopback HTTP server."""

import http.server, io, sys, threading
import pytest
from minirag.api import Index
from minirag.config import MiniragError
from minirag.wire import to_wire

PAGE = (
    "<html><head><title>Harbour office</title></head><body><nav><a href='/'>Home</a> <a href='/map'>Map</a></nav>"
    "<main><h1>Berth rules</h1><p>Ships moor at <a href='https://port.example/berths/4'>berth four</a> after the "
    "pilot boards; the tide table is at <a href='https://port.example/tides'></a>.</p></main></body></html>"
)


def _xlsx() -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.title = "Berths"
    wb.active.append(["Berth", "Ship"])
    wb.active.append([4, "Kestrel"])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


BODIES = {
    "/page": ("text/html; charset=utf-8", PAGE.encode()),
    "/berths": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", _xlsx()),
    "/blank": ("text/html", b"<table><tr><td></td><td> </td></tr><tr><td></td><td></td></tr></table>"),
}


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        kind, body = BODIES.get(self.path, ("text/plain", b"not found"))
        self.send_response(200 if self.path in BODIES else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def ix(root, model_dir, shared_embedder):
    env = {"ALLOW_PRIVATE_URLS": "1"}
    i = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder, env=env)
    yield i
    i.close()


def test_ingest_data_html_keeps_main_content_and_link_text(ix):
    r = to_wire(ix.ingest_data(PAGE, format="html", source="web/rules"))
    assert r["title"] == "Harbour office"
    text = to_wire(ix.read(source="web/rules"))["text"]
    assert "Ships moor at berth four after the pilot boards; the tide table is at https://port.example/tides." in text
    assert "Home" not in text and "port.example/berths" not in text and "](" not in text


def test_ingest_url_takes_the_same_path(ix, server):
    r = to_wire(ix.ingest_url(server + "/page"))
    assert r["title"] == "Harbour office"
    text = to_wire(ix.read(source=server + "/page"))["text"]
    assert "Ships moor at berth four" in text and "Map" not in text and "berths/4" not in text


def test_a_url_serving_a_spreadsheet_needs_no_pandas(ix, server, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # any import of pandas fails, as on a base install
    to_wire(ix.ingest_url(server + "/berths"))
    assert "| Berth | Ship |\n| --- | --- |\n| 4 | Kestrel |" in to_wire(ix.read(source=server + "/berths"))["text"]


def test_blank_tables_make_no_chunks(ix, server):
    blank = "|  |  |\n| --- | --- |\n" + "|  |  |\n" * 200
    with pytest.raises(MiniragError, match="web/blank: no text in the content; nothing to index"):
        ix.ingest_data(blank, format="markdown", source="web/blank")
    with pytest.raises(MiniragError, match="/blank: no text could be extracted"):
        ix.ingest_url(server + "/blank")
    crew = "# Crew list\n\nThe crew signs below.\n\n" + blank
    r = to_wire(ix.ingest_data(crew, format="markdown", source="web/crew"))
    assert r["chunkCount"] == 1
    assert "|  |" not in to_wire(ix.read(source="web/crew"))["text"]
