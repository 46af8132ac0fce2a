"""OCR extra (R-I7, R-O1..R-O4): per-page routing, images, engines, model download, the unavailable path.

Scans are drawn at test time (tests/data/ocr/scans.py). Engine tests skip only when the engine is
genuinely missing; CI installs both (tesseract-ocr{,-rus,-eng} from Debian, rapidocr-onnxruntime from PyPI).
"""

import functools, hashlib, http.server, socket, sys, threading
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parent / "data" / "ocr"))
import scans  # noqa: E402

from minirag.formats import ocr  # noqa: E402
from minirag.config import MiniragError  # noqa: E402

pypdfium2 = pytest.importorskip("pypdfium2", reason="pypdfium2 not installed (install: pip install 'minirag[ocr]')")
needs_tesseract = pytest.mark.requires_tool("tesseract")  # conftest: skip naming the apt packages; fail in CI
needs_rapidocr = pytest.mark.skipif(
    not ocr._has_rapidocr(), reason="rapidocr-onnxruntime not installed (install: pip install 'minirag[ocr]')"
)


def words_in(text: str, words: list[str]) -> list[str]:
    "The expected words missing from `text` (case-insensitive)."
    low = text.lower()
    return [w for w in words if w.lower() not in low]


@pytest.fixture(scope="module")
def en_page():
    return scans.page_image(scans.EN)


@pytest.fixture(scope="module")
def ru_page():
    return scans.page_image(scans.RU)


# ---- language ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lang",
    [
        None,
        "",
        "auto",
        "ru",
        "en",
        "rapidocr:en",
        "rapidocr:cyrillic",
        "tesseract:rus",
        "tesseract:rus+eng+ukr",
        " auto ",
    ],
)
def test_valid_langs(lang):
    assert ocr.validate_ocr_lang(lang) is None


@pytest.mark.parametrize(
    "lang",
    [
        "russian",
        "rapidocr",
        "rapidocr:ru",
        "tesseract:",
        "tesseract:rus eng",
        "tesseract:Rus",
        "tesseract:rus+",
        "paddle:en",
    ],
)
def test_unknown_lang_lists_valid_ids(lang):
    msg = ocr.validate_ocr_lang(lang)
    assert msg and repr(lang.strip()) in msg
    for valid in ocr.OCR_LANG_IDS:
        assert valid in msg


def test_unknown_lang_is_an_error_at_use(tmp_path):
    png = tmp_path / "a.png"
    scans.page_image(["x"], a4=False).save(png)
    with pytest.raises(MiniragError, match="valid values"):
        ocr.ocr_image(png, "klingon", tmp_path)
    assert ocr.ocr_status(SimpleNamespace(ocr_lang="klingon"))["ocr"] == "unavailable"


# ---- engine resolution and the unavailable path (monkeypatched) --------------------------------


def _machine(monkeypatch, rapid: bool, tess_langs: set | None, pdfium: bool = True):
    monkeypatch.setattr(ocr, "_has_rapidocr", lambda: rapid)
    monkeypatch.setattr(ocr, "_has_pdfium", lambda: pdfium)
    monkeypatch.setattr(ocr, "_tesseract_bin", lambda: "/usr/bin/tesseract" if tess_langs is not None else None)
    monkeypatch.setattr(ocr, "_tesseract_langs", lambda b: frozenset(tess_langs or ()))


@pytest.mark.parametrize(
    "rapid,tess,lang,engine",
    [
        (True, {"rus", "eng"}, None, "tesseract:rus+eng"),
        (True, {"rus"}, "ru", "tesseract:rus"),
        (True, {"eng"}, "auto", "rapidocr:cyrillic"),  # tesseract without the rus pack cannot be the default
        (True, None, None, "rapidocr:cyrillic"),
        (False, {"eng"}, "en", "tesseract:eng"),
        (True, {"rus", "eng"}, "en", "rapidocr:en"),
        (True, {"rus", "eng", "ukr"}, "tesseract:ukr+rus", "tesseract:ukr+rus"),
    ],
)
def test_resolution(monkeypatch, rapid, tess, lang, engine):
    _machine(monkeypatch, rapid, tess)
    assert ocr.ocr_available()
    assert ocr.ocr_status(SimpleNamespace(ocr_lang=lang)) == {"ocr": engine}


@pytest.mark.parametrize(
    "rapid,tess,lang,hint",
    [
        (False, {"eng"}, None, "tesseract-ocr-rus"),  # nothing can read Cyrillic: say how to get it
        (False, None, "tesseract:rus", None),  # nothing at all: the extra's install line
        (True, None, "tesseract:rus+eng", "apt-get install tesseract-ocr tesseract-ocr-rus tesseract-ocr-eng"),
        (True, {"eng"}, "tesseract:deu", "apt-get install tesseract-ocr-deu"),
        (False, {"rus"}, "rapidocr:en", "pip install 'minirag[ocr]'"),
    ],
)
def test_unresolvable_lang_names_the_fix(monkeypatch, tmp_path, rapid, tess, lang, hint):
    _machine(monkeypatch, rapid, tess)
    st = ocr.ocr_status(SimpleNamespace(ocr_lang=lang))
    assert st["ocr"] == "unavailable"
    assert (hint or ocr.INSTALL_HINT) in st["ocrHint"]
    pdf = scans.image_pdf(tmp_path / "scan.pdf", [scans.page_image(["Hello"], a4=False)])
    with pytest.raises(MiniragError, match="fix:"):
        ocr.ocr_pdf(pdf, 25, lang, tmp_path)


def test_without_the_extra(monkeypatch, tmp_path):
    "No rapidocr and no tesseract: unavailable, hinted, and OCR calls fail instead of returning empty text (R-I7)."
    _machine(monkeypatch, False, None)
    assert ocr.ocr_available() is False
    assert ocr.ocr_status(SimpleNamespace(ocr_lang=None)) == {
        "ocr": "unavailable",
        "ocrHint": "pip install 'minirag[ocr]'",
    }
    pdf = scans.image_pdf(tmp_path / "scan.pdf", [scans.page_image(["Hello"], a4=False)])
    with pytest.raises(MiniragError, match=r"pip install 'minirag\[ocr\]'"):
        ocr.ocr_pdf(pdf, 25, None, tmp_path)
    png = tmp_path / "a.png"
    scans.page_image(["Hello"], a4=False).save(png)
    with pytest.raises(MiniragError, match=r"pip install 'minirag\[ocr\]'"):
        ocr.ocr_image(png, None, tmp_path)
    # a PDF whose pages all have text needs no engine at all
    text = tmp_path / "typed.pdf"
    text.write_bytes(scans.text_pdf_bytes(["A typed page with plenty of real text on it"]))
    assert ocr.ocr_pdf(text, 25, None, tmp_path) == ocr.OcrText("", "", [])


def test_engines_without_pdfium_is_unavailable(monkeypatch):
    _machine(monkeypatch, True, {"rus", "eng"}, pdfium=False)
    assert ocr.ocr_available() is False
    assert ocr.ocr_status(SimpleNamespace(ocr_lang=None))["ocr"] == "unavailable"


# ---- PDFs: per-page routing (pages without a text layer go to OCR) ---------------------------------------------------

COVER = ["Typed cover page of the annual report", "Prepared by the finance department"]


@needs_tesseract
def test_mixed_pdf_ocrs_only_scanned_pages(tmp_path, en_page, ru_page):
    pdf = scans.mixed_pdf(tmp_path / "mixed.pdf", COVER, [en_page, ru_page])
    r = ocr.ocr_pdf(pdf, 25, None, tmp_path)
    assert (r.engine, r.pages) == ("tesseract:rus+eng", [2, 3])
    assert not words_in(r.text, ["glacier", "meltwater", "invoice", "4711", "harbour", "pilot"])
    assert not words_in(r.text, ["ледников", "пятницу", "Лоцман", "рассвете"])
    assert words_in(r.text, ["cover", "finance"]) == ["cover", "finance"]  # the typed page is not OCRed
    low = r.text.lower()
    assert low.index("## page 2") < low.index("glacier") < low.index("## page 3") < low.index("ледников")


@needs_tesseract
def test_min_chars_threshold_routes_the_cover_too(tmp_path, en_page):
    pdf = scans.mixed_pdf(tmp_path / "mixed.pdf", ["Short cover"], [en_page])  # 10 non-space chars
    r = ocr.ocr_pdf(pdf, 10, None, tmp_path)
    assert r.pages == [2] and r.text.startswith("## Page 2\n\n")  # in a longer PDF, OCR text says where it was
    r = ocr.ocr_pdf(pdf, 11, None, tmp_path)
    assert r.pages == [1, 2] and "short cover" in r.text.lower()
    assert ocr.ocr_pdf(pdf, 0, None, tmp_path) == ocr.OcrText("", "", [])  # 0 disables OCR


def test_typed_pdf_needs_no_ocr(tmp_path):
    pdf = tmp_path / "typed.pdf"
    pdf.write_bytes(scans.text_pdf_bytes(COVER))
    assert ocr.ocr_pdf(pdf, 25, "rapidocr:cyrillic", tmp_path) == ocr.OcrText("", "", [])
    assert not (tmp_path / "ocr").exists()  # no model fetched for nothing


@needs_rapidocr
def test_image_pdf_with_bundled_rapidocr(tmp_path, en_page):
    pdf = scans.image_pdf(tmp_path / "scan.pdf", [en_page])
    r = ocr.ocr_pdf(pdf, 25, "rapidocr:en", tmp_path)
    assert (r.engine, r.pages) == ("rapidocr:en", [1])
    assert not words_in(r.text, ["quarterly", "glacier", "invoice", "4711", "friday", "harbour", "dawn"])
    assert "## Page" not in r.text  # a single page needs no heading


@needs_rapidocr
def test_bundled_rapidocr_cannot_read_cyrillic(tmp_path, ru_page):
    "Why the default is not the bundled model: Cyrillic comes out as Latin look-alikes (R-O3)."
    png = tmp_path / "ru.png"
    ru_page.save(png)
    r = ocr.ocr_image(png, "rapidocr:en", tmp_path)
    assert len(r.text) > 20  # it does "read" something...
    assert words_in(r.text, ["ледников", "пятницу", "рассвете"]) == ["ледников", "пятницу", "рассвете"]


@pytest.mark.parametrize("content", [b"", b"%PDF-1.4\ngarbage", b"not a pdf at all"])
def test_broken_pdf_is_a_clear_error(tmp_path, content):
    p = tmp_path / "broken.pdf"
    p.write_bytes(content)
    with pytest.raises(MiniragError, match="cannot open PDF broken.pdf"):
        ocr.ocr_pdf(p, 25, None, tmp_path)


def test_negative_min_chars_rejected(tmp_path):
    with pytest.raises(MiniragError, match="RAG_OCR_MIN_CHARS_PER_PAGE"):
        ocr.ocr_pdf(tmp_path / "x.pdf", -1, None, tmp_path)


# ---- images: documents when the extra is installed -------------------------------------------------------------------


@needs_tesseract
def test_multipage_tiff_reads_every_page(tmp_path, en_page, ru_page):
    tif = scans.multipage_tiff(tmp_path / "doc.tiff", [en_page, ru_page, scans.page_image(["Третья страница"])])
    r = ocr.ocr_image(tif, "ru", tmp_path)
    assert (r.engine, r.pages) == ("tesseract:rus+eng", [1, 2, 3])
    assert not words_in(r.text, ["glacier", "ледников", "Лоцман", "Третья"])
    assert [r.text.index(f"## Page {n}") for n in (1, 2, 3)] == sorted(r.text.index(f"## Page {n}") for n in (1, 2, 3))


@needs_tesseract
@pytest.mark.parametrize(
    "ext,fmt",
    [(".png", "PNG"), (".jpg", "JPEG"), (".jpeg", "JPEG"), (".tif", "TIFF"), (".bmp", "BMP"), (".webp", "WEBP")],
)
def test_each_image_format(tmp_path, ext, fmt):
    img = scans.page_image(["Счёт номер 4711 оплатить", "Invoice due on Friday"], a4=False)
    p = tmp_path / f"scan{ext.upper()}"  # extension match is case-insensitive
    img.convert("RGB").save(p, fmt, **({"quality": 95} if fmt in ("JPEG", "WEBP") else {}))
    r = ocr.ocr_image(p, None, tmp_path)
    assert r.pages == [1]
    assert not words_in(r.text, ["Счёт", "4711", "оплатить", "invoice", "friday"])


@needs_rapidocr
def test_png_with_bundled_rapidocr(tmp_path, en_page):
    png = tmp_path / "en.png"
    en_page.save(png)
    r = ocr.ocr_image(png, "en", tmp_path)
    assert r.engine == "rapidocr:en"
    assert not words_in(r.text, ["glacier", "meltwater", "pilot", "4711"])
    assert r.text.splitlines()[0].lower() == scans.EN[0].lower()  # boxes joined into reading order


def test_not_an_image(tmp_path):
    p = tmp_path / "fake.png"
    p.write_bytes(b"this is not a picture")
    if not ocr.ocr_available():
        pytest.skip("no OCR engine")
    with pytest.raises(MiniragError, match="cannot read image fake.png"):
        ocr.ocr_image(p, None, tmp_path)
    with pytest.raises(MiniragError, match="not an OCR image"):
        ocr.ocr_image(tmp_path / "doc.gif", None, tmp_path)


def test_image_exts():
    assert ocr.IMAGE_EXTS == (".png", ".jpg", ".jpeg", ".tiff", ".tif", ".bmp", ".webp")


# ---- the Cyrillic rapidocr model: downloaded once into CACHE_DIR -------------------------


class _Server:
    "A local HTTP server over `folder` that counts requests per path."

    def __init__(self, folder: Path):
        self.hits: dict[str, int] = {}
        hits = self.hits

        class H(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                hits[self.path] = hits.get(self.path, 0) + 1
                super().do_GET()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def model_server(tmp_path, monkeypatch):
    """Serve a stand-in 'Cyrillic' model (rapidocr's bundled rec model + its dictionary) and point the pinned
    table at it, so the whole download → load → recognise path runs without the model host."""
    pytest.importorskip(
        "rapidocr_onnxruntime", reason="rapidocr-onnxruntime not installed (install: pip install 'minirag[ocr]')"
    )
    import onnxruntime, rapidocr_onnxruntime

    src = Path(rapidocr_onnxruntime.__file__).parent / "models" / "ch_PP-OCRv4_rec_infer.onnx"
    served = tmp_path / "served"
    served.mkdir()
    (served / "rec.onnx").write_bytes(src.read_bytes())
    chars = onnxruntime.InferenceSession(str(src)).get_modelmeta().custom_metadata_map["character"]
    (served / "dict.txt").write_text(chars if chars.endswith("\n") else chars + "\n", encoding="utf-8")
    srv = _Server(served)
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    table = {
        "cyrillic_PP-OCRv3_rec_mobile.onnx": (f"{srv.url}/rec.onnx", sha(served / "rec.onnx")),
        "cyrillic_dict.txt": (f"{srv.url}/dict.txt", sha(served / "dict.txt")),
    }
    monkeypatch.setattr(ocr, "_RAPIDOCR_CYRILLIC", table)
    monkeypatch.setattr(ocr, "_has_rapidocr", lambda: True)
    monkeypatch.setattr(ocr, "_tesseract_bin", lambda: None)  # force the rapidocr default
    ocr._rapidocr_engine.cache_clear()
    yield srv
    srv.close()
    ocr._rapidocr_engine.cache_clear()


def test_model_downloaded_once_when_asked_then_used(tmp_path, model_server):
    cache = tmp_path / "cache"
    img = scans.page_image(["Harbour pilot boards at dawn"], a4=False)
    png = tmp_path / "a.png"
    img.save(png)
    with pytest.raises(MiniragError, match="OCR never downloads.*download=True"):
        ocr.ocr_image(png, None, cache)  # OCR in a sync never fetches the model
    assert model_server.hits == {} and not (cache / "ocr").exists()
    ocr.rapidocr_model_files(cache, download=True)
    r = ocr.ocr_image(png, None, cache)  # default resolves to rapidocr:cyrillic
    assert r.engine == "rapidocr:cyrillic"
    assert not words_in(r.text, ["harbour", "pilot", "dawn"])
    assert sorted(p.name for p in (cache / "ocr").iterdir()) == [
        "cyrillic_PP-OCRv3_rec_mobile.onnx",
        "cyrillic_dict.txt",
    ]
    ocr._rapidocr_engine.cache_clear()  # a new process: files are on disk
    ocr.ocr_image(png, None, cache)
    assert model_server.hits == {"/rec.onnx": 1, "/dict.txt": 1}


def test_corrupt_cached_file_is_fetched_again(tmp_path, model_server):
    cache = tmp_path / "cache"
    ocr.rapidocr_model_files(cache, download=True)
    (cache / "ocr" / "cyrillic_dict.txt").write_text("truncated")
    with pytest.raises(MiniragError, match="cyrillic_dict.txt missing or damaged"):
        ocr.rapidocr_model_files(cache)
    files = ocr.rapidocr_model_files(cache, download=True)
    assert files["cyrillic_dict.txt"].read_text(encoding="utf-8") != "truncated"
    assert model_server.hits == {"/rec.onnx": 1, "/dict.txt": 2}


def test_digest_mismatch_leaves_nothing(tmp_path, model_server, monkeypatch):
    name = "cyrillic_PP-OCRv3_rec_mobile.onnx"
    url, _ = ocr._RAPIDOCR_CYRILLIC[name]
    monkeypatch.setitem(ocr._RAPIDOCR_CYRILLIC, name, (url, "0" * 64))
    with pytest.raises(MiniragError, match=f"{name}.*does not match the pinned"):
        ocr.rapidocr_model_files(tmp_path / "cache", download=True)
    assert list((tmp_path / "cache" / "ocr").iterdir()) == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_network_unreachable_is_a_per_file_error(tmp_path, monkeypatch):
    "The real pinned URL with every request routed to a dead proxy: a clear error, no file, no empty text."
    dead = f"http://127.0.0.1:{_closed_port()}"
    for k in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(k, dead)
    for k in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(k, "")
    cache = tmp_path / "cache"
    with pytest.raises(MiniragError) as e:
        ocr.rapidocr_model_files(cache, download=True)
    msg = str(e.value)
    assert "cyrillic_PP-OCRv3_rec_mobile.onnx" in msg and str(cache / "ocr") in msg and "modelscope" in msg
    assert "copy" in msg and "tesseract" in msg  # the fixes are named
    assert list((cache / "ocr").iterdir()) == []
    if ocr._has_rapidocr():  # and OCR through it fails the file
        monkeypatch.setattr(ocr, "_tesseract_bin", lambda: None)
        pdf = scans.image_pdf(tmp_path / "scan.pdf", [scans.page_image(["Привет"], a4=False)])
        with pytest.raises(MiniragError, match="OCR never downloads"):
            ocr.ocr_pdf(pdf, 25, None, cache)


@needs_tesseract
def test_missing_tesseract_pack_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(ocr, "_resolve", lambda lang: ("tesseract:zzz", ""))  # bypass the pack check
    png = tmp_path / "a.png"
    scans.page_image(["Hello"], a4=False).save(png)
    with pytest.raises(MiniragError, match="tesseract -l zzz failed"):
        ocr.ocr_image(png, "tesseract:zzz", tmp_path)


@needs_tesseract
def test_transparent_png_reads_as_paper(tmp_path):
    "Black text on a transparent background: flattening onto white keeps it readable (RGB alone turns it all black)."
    from PIL import Image

    text = scans.page_image(["Transparent invoice 4711"], a4=False)
    rgba = Image.new("RGBA", text.size, (0, 0, 0, 0))
    rgba.putalpha(text.point(lambda v: 255 - v))  # ink opaque, paper transparent
    p = tmp_path / "clear.png"
    rgba.save(p)
    assert not words_in(ocr.ocr_image(p, None, tmp_path).text, ["transparent", "invoice", "4711"])
