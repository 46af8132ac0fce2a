"OCR through the whole pipeline: scanned PDFs and images become searchable documents; without the extra, clear errors."

import sys
from pathlib import Path
import pytest
from minirag.config import MiniragError
import minirag.formats.ocr as ocr
import minirag.formats.convert as convert

sys.path.insert(0, str(Path(__file__).parent / "data" / "ocr"))
import scans  # noqa: E402
from minirag.wire import to_wire  # the typed results as the MCP tools return them


def need_tesseract(test):
    "tesseract (conftest: a skip naming the apt packages, a failure in CI) and the OCR extra's page renderer."
    test = pytest.mark.requires_tool("tesseract")(test)
    return pytest.mark.skipif(
        not ocr._has_pdfium(), reason="pypdfium2 not installed (install: pip install 'minirag[ocr]')"
    )(test)


@need_tesseract
def test_mixed_pdf_is_searchable_and_listed_with_its_engine(index, root):
    cover = ["Quarterly inventory report", "Prepared by the logistics team"]
    page = scans.page_image(["Pallet discrepancy in aisle seven", "Инвентаризация склада завершена"])
    p = scans.mixed_pdf(root / "report.pdf", cover, [page])
    r = to_wire(index.ingest(p))
    assert r["ocrEngine"].startswith("tesseract")
    text = to_wire(index.read(p))["text"]
    assert "Quarterly inventory report" in text and "discrepancy" in text.lower() and "инвентаризация" in text.lower()
    hit = to_wire(index.query("pallet discrepancy aisle", top_k=3))["results"][0]
    assert hit["source"] == str(p)
    assert to_wire(index.query("инвентаризация", top_k=3, weight=1.0))["results"][0]["source"] == str(p)
    listed = {f["displayPath"]: f for f in to_wire(index.list_files())["files"]}
    assert listed["report.pdf"]["ocrEngine"].startswith("tesseract")


@need_tesseract
def test_image_is_a_document_with_the_extra(index, root):
    img = root / "whiteboard.png"
    scans.page_image(["Deployment checklist", "rotate the signing keys"], a4=False).save(img)
    r = to_wire(index.ingest(img))
    assert r["chunkCount"] >= 1
    assert to_wire(index.query("signing keys", top_k=1))["results"][0]["source"] == str(img)


def test_scan_without_the_extra_is_a_clear_error(index, root, monkeypatch):
    p = scans.image_pdf(root / "scan.pdf", [scans.page_image(["Only pixels here"])])
    monkeypatch.setattr(ocr, "ocr_available", lambda: False)
    with pytest.raises(MiniragError, match=r"no text layer.*pip install 'minirag\[ocr\]'"):
        to_wire(index.ingest(p))


def test_images_are_not_documents_without_the_extra(index, root, monkeypatch):
    img = root / "photo.png"
    scans.page_image(["hello"], a4=False).save(img)
    monkeypatch.setattr(convert, "ocr_available", lambda: False)  # what convert_file and the listing ask
    with pytest.raises(MiniragError, match="OCR extra"):
        to_wire(index.ingest(img))
    assert [f for f in to_wire(index.list_files())["files"] if f["displayPath"] == "photo.png"] == []


def test_status_reports_ocr(index, monkeypatch):
    s = to_wire(index.status())
    assert "ocr" in s
    monkeypatch.setattr(ocr, "ocr_available", lambda: False)
    monkeypatch.setattr(ocr, "_has_rapidocr", lambda: False)
    monkeypatch.setattr(ocr, "_tesseract_bin", lambda: None)
    s = to_wire(index.status())
    assert s["ocr"] == "unavailable" and "minirag[ocr]" in s["ocrHint"]
