"""Seconds per page for each OCR engine on a rendered A4 scan, at the dpi `ocr_pdf` renders with.

    python bench/bench_ocr.py [pages]

Draws a full A4 page of English + Russian text with PIL, saves it as an image-only PDF, and times
`ocr_pdf` per engine. rapidocr:cyrillic is timed only when its model is already in CACHE_DIR/ocr/
(set CACHE_DIR) or downloadable. Prints one line per engine; nothing is asserted.
"""

import os, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "data" / "ocr"))
import scans  # noqa: E402
from minirag.formats import ocr  # noqa: E402
from minirag.config import MiniragError  # noqa: E402

ENGINES = ["tesseract:rus+eng", "tesseract:eng", "rapidocr:en", "rapidocr:cyrillic"]


def main(n_pages: int = 3):
    tmp = Path(tempfile.mkdtemp())
    cache = Path(os.environ.get("CACHE_DIR") or tmp / "cache")
    lines = (scans.EN + scans.RU) * 6  # 36 lines ≈ a dense A4 page
    pdf = scans.image_pdf(tmp / "a4.pdf", [scans.page_image(lines, dpi=300, pt=12)] * n_pages, dpi=300)
    print(f"{n_pages} A4 pages, {len(lines)} lines each, {os.cpu_count()} cores")
    for engine in ENGINES:
        status = ocr.ocr_status(type("C", (), {"ocr_lang": engine})())
        if status["ocr"] != engine:
            print(f"{engine:20s} skipped: {status.get('ocrHint')}")
            continue
        try:
            ocr.ocr_pdf(pdf, 25, engine, cache) if engine.startswith("rapidocr") else None  # load/download once
            t = time.perf_counter()
            r = ocr.ocr_pdf(pdf, 25, engine, cache)
            dt = (time.perf_counter() - t) / n_pages
        except MiniragError as e:
            print(f"{engine:20s} skipped: {str(e)[:110]}…")
            continue
        hits = sum(w.lower() in r.text.lower() for w in ("glacier", "invoice", "ледников", "пятницу", "Лоцман"))
        print(
            f"{engine:20s} {ocr._dpi(engine)} dpi  {dt:5.2f} s/page  {len(r.text) // n_pages:5d} chars/page  "
            f"{hits}/5 probe words"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
