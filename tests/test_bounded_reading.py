"""No file can hold the server: a zip bomb, a workbook of millions of rows, a PDF page of 200 × 200 inches and a PDF of
thousands of blank pages each go through the installed CLI (`minirag-mcp sync --json`) as a subprocess, with a
deadline and its peak memory measured. Before these bounds, a 1.4 MB DOCX unpacking to 1.5 GB took the process past
its memory, the workbook ran for minutes, the huge page allocated gigabytes for OCR and the blank pages were OCRed
one by one. The bombs are built here: deflate packs each 16 MB of zeros alike, so one chunk is compressed and
repeated."""

import json
import os
import signal
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pytest
from conftest import said, write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
ENV_VARS = [
    "BASE_DIR",
    "BASE_DIRS",
    "DB_PATH",
    "MAX_FILE_SIZE",
    "MAX_UNZIPPED_SIZE",
    "MAX_SHEET_CELLS",
    "RAG_OCR_MAX_PAGES",
    "RAG_OCR_MIN_CHARS_PER_PAGE",
]
# the CLI with the model loaded peaks near 400 MB here; a bomb read whole passes 1.5 GB
PEAK_LIMIT_MB = 1000
# runs the command and prints its peak resident size: a fresh process, so only this child is counted. Its address
# space is capped at 6 GiB (a sync maps ~2.5 GB) so that old code, which read the bomb whole, fails without taking
# the machine's memory with it
MEASURE = (
    "import resource, subprocess, sys; resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30)); "
    "r = subprocess.run(sys.argv[1:]); "
    "print(f'peak-kb={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); "
    "sys.exit(r.returncode)"
)


def env_for(root: Path, model_dir: Path, **extra) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return dict(
        e,
        BASE_DIR=str(root),
        DB_PATH=str(root.parent / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        **extra,
    )


def sync(env: dict, deadline: float) -> tuple[dict, float, float]:
    "(the `sync --json` report, wall seconds, peak MB); the test fails when the sync outlives `deadline`."
    t = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-c", MEASURE, CLI, "sync", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the wrapper and the CLI under it
        p.communicate()
        pytest.fail(f"sync did not return within {deadline} s")
    peak, secs = int(err.rsplit("peak-kb=", 1)[1]) / 1024, time.monotonic() - t
    print(f"sync: {secs:.1f} s, peak {peak:.0f} MB")  # shown with -s
    assert p.returncode in (0, 1), err[-2000:]
    return json.loads(out), secs, peak


def failure(report: dict, name: str) -> str:
    "The reason `sync` gives for the failed file `name` (a failure is counted and its reason is an error)."
    got = [w for w in said(report) if name in w]
    assert report["failed"] >= 1 and got, json.dumps(report)[:2000]
    return got[0]


def repeated(head: bytes, body: bytes, times: int, tail: bytes) -> tuple[bytes, int, int]:
    "(raw deflate stream, crc32, size) of `head + body * times + tail`, compressing `body` once."
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(body) + c.flush(zlib.Z_FULL_FLUSH)  # after a full flush the same input packs the same
    crc = zlib.crc32(head)
    for _ in range(times):
        crc = zlib.crc32(body, crc)
    crc = zlib.crc32(tail, crc)
    return first + block * times + c.compress(tail) + c.flush(), crc, len(head) + len(body) * times + len(tail)


def packed(chunks) -> tuple[bytes, int, int]:
    "(raw deflate stream, crc32, size) of the concatenated byte `chunks`."
    c, out, crc, size = zlib.compressobj(1, zlib.DEFLATED, -15), [], 0, 0
    for b in chunks:
        out.append(c.compress(b))
        crc, size = zlib.crc32(b, crc), size + len(b)
    return b"".join(out) + c.flush(), crc, size


def write_zip(path: Path, parts: list[tuple]) -> Path:
    "A zip of (name, text) or (name, (stream, crc, size)) parts, written by hand so a header can state any size."
    out, central = bytearray(), bytearray()
    for name, data in parts:
        if isinstance(data, str):
            raw = data.encode()
            method, packed, crc, size = 0, raw, zlib.crc32(raw), len(raw)
        else:
            method, (packed, crc, size) = 8, data
        n = name.encode()
        fields = (method, 0, 0x21, crc, len(packed), size, len(n), 0)
        out_at = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, *fields) + n + packed
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, *fields, 0, 0, 0, 0, out_at) + n
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(parts), len(parts), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + eocd))
    return path


def content_types(main: str, part: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Override PartName="/'
        f'{part}" ContentType="application/vnd.openxmlformats-officedocument.{main}.main+xml"/></Types>'
    )


ZEROS = 1_500_000_000


@pytest.fixture(scope="module")
def zeros():
    "1.5 GB of zeros as a deflate stream of about 1.4 MB."
    chunk = bytes(16 << 20)
    return repeated(b"", chunk, ZEROS // len(chunk), b"")


@pytest.fixture
def docs(tmp_path):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "good.md", "# Lighthouse\n\nThe keeper trims the lamp wick every evening at dusk.\n")
    return root


def docx(path: Path, document) -> Path:
    return write_zip(
        path,
        [
            ("[Content_Types].xml", content_types("wordprocessingml.document", "word/document.xml")),
            ("word/document.xml", document),
        ],
    )


def test_a_docx_bomb_is_refused_before_it_is_read(docs, model_dir, zeros):
    docx(docs / "bomb.docx", zeros)
    assert (docs / "bomb.docx").stat().st_size < 2_000_000
    report, secs, peak = sync(env_for(docs, model_dir), deadline=120)
    assert report["ingested"] == 1, report
    why = failure(report, "bomb.docx")
    assert "zip bomb" in why and "word/document.xml" in why, why
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"
    # the same part under a bound: MAX_UNZIPPED_SIZE names itself
    small = repeated(b"<w:document>", b"<w:p/>" * 1000, 2_000, b"</w:document>")
    docx(docs / "big.docx", small)
    report, _, _ = sync(env_for(docs, model_dir, MAX_UNZIPPED_SIZE="1000000"), deadline=120)
    assert "MAX_UNZIPPED_SIZE" in failure(report, "big.docx")


def test_a_forged_size_cannot_grow_a_part(docs, model_dir, zeros, tmp_path):
    "A header that says 1 KB in front of 1.5 GB: zipfile stops at the stated size and fails the CRC; sync refuses it."
    stream, crc, _ = zeros
    forged = docx(tmp_path / "forged.docx", (stream, crc, 1000))
    got = 0
    with zipfile.ZipFile(forged) as z, z.open("word/document.xml") as f:
        with pytest.raises(zipfile.BadZipFile, match="Bad CRC-32"):
            while chunk := f.read(100):
                got += len(chunk)
    assert got <= 1000  # never more than the size stated: the CRC fails at that size
    os.replace(forged, docs / "forged.docx")
    report, _, peak = sync(env_for(docs, model_dir), deadline=120)
    why = failure(report, "forged.docx")
    assert "forged zip header" in why, why
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"


def xlsx(path: Path, rows: int) -> Path:
    "A workbook of one sheet holding `rows` rows of one number; rows and cells without a reference, as Excel allows."
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    return write_zip(
        path,
        [
            (
                "[Content_Types].xml",
                content_types("spreadsheetml.sheet", "xl/workbook.xml").replace(
                    "</Types>",
                    '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-'
                    'officedocument.spreadsheetml.worksheet+xml"/></Types>',
                ),
            ),
            (
                "_rels/.rels",
                f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
            ),
            (
                "xl/workbook.xml",
                f'<workbook {ns} xmlns:r="{rel}"><sheets><sheet name="Log" sheetId="1" r:id="rId1"/>'
                "</sheets></workbook>",
            ),
            (
                "xl/_rels/workbook.xml.rels",
                f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
                f'relationships"><Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
                "</Relationships>",
            ),
            (
                "xl/worksheets/sheet1.xml",
                packed(
                    [
                        f"<worksheet {ns}><sheetData>".encode(),
                        *(
                            "".join(f"<row><c><v>{i}</v></c></row>" for i in range(k, k + 10_000)).encode()
                            for k in range(0, rows, 10_000)
                        ),
                        b"</sheetData></worksheet>",
                    ]
                ),
            ),
        ],
    )


def test_a_workbook_of_millions_of_rows_is_read_to_its_bound(docs, model_dir):
    path = xlsx(docs / "rows.xlsx", 300_000)
    assert path.stat().st_size < 2_000_000
    report, secs, peak = sync(env_for(docs, model_dir, MAX_SHEET_CELLS="500"), deadline=120)
    assert report["ingested"] == 2, report
    said = " ".join(w for w in report["warnings"] if "rows.xlsx" in w)
    assert "only the first 500 cells" in said and "MAX_SHEET_CELLS" in said, report
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"


def blank_pdf(path: Path, pages: int, inches: float = 8.27) -> Path:
    import pypdfium2

    doc = pypdfium2.PdfDocument.new()
    for _ in range(pages):
        doc.new_page(inches * 72, inches * 72)
    doc.save(str(path))
    doc.close()
    return path


@pytest.fixture
def ocr():
    from minirag.formats.ocr import ocr_available

    if not ocr_available():
        pytest.skip("the OCR extra is not installed")


def test_a_page_of_200_by_200_inches_is_ocred_smaller(docs, model_dir, ocr):
    assert blank_pdf(docs / "huge.pdf", 1, inches=200).stat().st_size < 2_000
    report, secs, peak = sync(env_for(docs, model_dir), deadline=120)
    failure(report, "huge.pdf")  # a blank page has no text, but it was rendered and read
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"


def test_a_pdf_of_thousands_of_blank_pages_ocrs_its_first_pages(docs, model_dir, ocr):
    blank_pdf(docs / "blank.pdf", 2_000)
    report, secs, peak = sync(env_for(docs, model_dir, RAG_OCR_MAX_PAGES="3"), deadline=120)
    why = failure(report, "blank.pdf")
    assert "RAG_OCR_MAX_PAGES" in why and "1,997 more pages" in why, why


ODS_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
)


def test_an_ods_read_by_its_xml_is_read_to_its_bound(docs, model_dir):
    "An .ods calamine refuses (here: no manifest) is read by its XML; its repeats spell out a million cells."
    cell = '<table:table-cell table:number-columns-repeated="1000"><text:p>LX-{}</text:p></table:table-cell>'
    rows = "".join(
        f'<table:table-row table:number-rows-repeated="999">{cell.format(i)}</table:table-row>' for i in range(3)
    )
    body = (
        f'<?xml version="1.0"?><office:document-content {ODS_NS}><office:body><office:spreadsheet>'
        f'<table:table table:name="Big">{rows}</table:table>'
        "</office:spreadsheet></office:body></office:document-content>"
    )
    path = write_zip(
        docs / "cells.ods",
        [("mimetype", "application/vnd.oasis.opendocument.spreadsheet"), ("content.xml", packed([body.encode()]))],
    )
    assert path.stat().st_size < 2_000
    report, secs, peak = sync(env_for(docs, model_dir, MAX_SHEET_CELLS="5000"), deadline=120)
    assert report["ingested"] == 2, report
    said = " ".join(w for w in report["warnings"] if "cells.ods" in w)
    assert "only the first 5,000 cells" in said and "MAX_SHEET_CELLS" in said, report


def png(path: Path, width: int, height: int) -> Path:
    "A grey PNG of `width` × `height` zero pixels: a few hundred kB that decode to width × height bytes."
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    c, row, idat = zlib.compressobj(9), bytes(width + 1), []
    for _ in range(height):
        idat.append(c.compress(row))
    idat.append(c.flush())
    head = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", b"".join(idat)) + chunk(b"IEND", b""))
    return path


def test_a_png_bomb_is_refused_from_its_header(docs, model_dir, ocr):
    "144 million pixels: under PIL's own refusal (179 million), so it used to be decoded and OCRed whole."
    assert png(docs / "bomb.png", 12_000, 12_000).stat().st_size < 1_000_000
    report, secs, peak = sync(env_for(docs, model_dir), deadline=120)
    why = failure(report, "bomb.png")
    assert "12,000 × 12,000 pixels" in why and "scale it down" in why, why
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB"
