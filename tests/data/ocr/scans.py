"""Render synthetic scans for the OCR tests, notebook and bench: text -> image -> PDF/TIFF/PNG.

Nothing here is committed as a binary: every scan is drawn at test time with PIL.
"""

import zlib
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")  # Debian fonts-dejavu-core: Latin + Cyrillic

EN = [
    "Quarterly report on glacier meltwater",
    "Invoice number 4711 is due on Friday",
    "The harbour pilot boards at dawn",
]
RU = ["Отчёт о таянии ледников", "Счёт номер 4711 оплатить в пятницу", "Лоцман поднимается на борт на рассвете"]


def font(size: int):
    "DejaVu Sans at `size` px (Cyrillic capable); skip cleanly if the font package is missing."
    if not FONT.exists():
        import pytest

        pytest.skip("fonts-dejavu-core is not installed (apt-get install -y fonts-dejavu-core)")
    return ImageFont.truetype(str(FONT), size)


def page_image(lines: list[str], dpi: int = 200, a4: bool = True, pt: int = 14) -> Image.Image:
    "A greyscale 'scan': `lines` drawn at `pt` points on an A4 page (or a tight strip when `a4` is False)."
    f = font(int(dpi * pt / 72))
    step, margin = int(dpi * pt * 1.8 / 72), int(dpi * 0.8)
    w = int(8.27 * dpi) if a4 else int(dpi * 0.6) + max(int(f.getlength(l)) for l in lines) + margin
    h = int(11.69 * dpi) if a4 else 2 * margin + step * len(lines)
    im = Image.new("L", (w, h), 255)
    d = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        d.text((margin, margin + i * step), line, font=f, fill=0)
    return im


def image_pdf(path: Path, pages: list[Image.Image], dpi: int = 200) -> Path:
    "A PDF made only of page images: no text layer at all, like a scanner's output."
    pages = [p.copy() for p in pages]  # PIL leaves encoder state on appended frames; never reuse the caller's
    pages[0].save(path, "PDF", save_all=True, append_images=pages[1:], resolution=dpi)
    return path


def multipage_tiff(path: Path, pages: list[Image.Image], dpi: int = 200) -> Path:
    "A multi-page TIFF (one frame per page)."
    pages = [p.copy() for p in pages]
    pages[0].save(path, "TIFF", save_all=True, append_images=pages[1:], dpi=(dpi, dpi))
    return path


def text_pdf_bytes(lines: list[str]) -> bytes:
    "A one-page A4 PDF with a real text layer (Helvetica text objects), written by hand."
    ops = ["BT", "/F1 14 Tf", "72 770 Td", "20 TL"] + [f"({l}) Tj T*" for l in lines] + ["ET"]
    stream = zlib.compress("\n".join(ops).encode("latin-1"))
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def mixed_pdf(path: Path, cover_lines: list[str], scans: list[Image.Image], dpi: int = 200) -> Path:
    "A typed cover page (real text layer) followed by scanned pages (images only), merged with pypdfium2."
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(text_pdf_bytes(cover_lines))
    scanned = pdfium.PdfDocument(image_pdf(path.with_suffix(".scans.pdf"), scans, dpi))
    doc.import_pages(scanned)
    doc.save(path)
    scanned.close()
    doc.close()
    path.with_suffix(".scans.pdf").unlink()
    return path
