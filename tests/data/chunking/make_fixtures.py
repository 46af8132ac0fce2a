"""Regenerate the chunking fixtures: `python tests/data/chunking/make_fixtures.py`.

The .docx is written as raw OOXML with `zipfile` (python-docx is not a project
dependency); the .pptx uses python-pptx, which markitdown[pptx] installs.
"""

import random, zipfile
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).parent


def write_docx(path: Path, paragraphs: list[tuple[str, str]]):
    "Minimal .docx: `paragraphs` are (style, text) with style 'Heading1' or ''."
    body = []
    for style, text in paragraphs:
        ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        body.append(f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>')
    doc = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body>{''.join(body)}</w:body></w:document>"
    )
    styles = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style></w:styles>'
    )
    ct = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        '<Override PartName="/word/styles.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
        "</Types>"
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
        'Target="word/document.xml"/>'
        "</Relationships>"
    )
    drels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
        "</Relationships>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in [
            ("[Content_Types].xml", ct),
            ("_rels/.rels", rels),
            ("word/document.xml", doc),
            ("word/styles.xml", styles),
            ("word/_rels/document.xml.rels", drels),
        ]:
            z.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data)


TOPICS = [
    "the warehouse migration",
    "stock counts in zone B",
    "the supplier audit",
    "overtime for the night shift",
    "the label printer outage",
    "returns processing",
    "the quarterly budget",
    "safety training dates",
]
SAYINGS = [
    "I think we should move {t} to next week, because the team is still busy with the inventory.",
    "We checked {t} yesterday and the numbers match the ledger except for two pallets.",
    "Can someone own {t}? It keeps slipping and the client asked about it twice.",
    "My proposal for {t} is to split it into two phases and review after the first one.",
    "For {t} we need approval from finance before Friday, otherwise the order is delayed.",
]


def transcript_turns(rng, n, step=(20, 50)):
    t, out = 5, []
    for _ in range(n):
        who = rng.choice(["Alice", "Boris", "Chen", "Dana"])
        out.append((t, who, rng.choice(SAYINGS).format(t=rng.choice(TOPICS))))
        t += rng.randint(*step)
    return out


def hms(s):
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def make_transcript_docx(rng):
    paras = [("Heading1", "Weekly warehouse planning meeting")]
    for t, who, said in transcript_turns(rng, 40):
        paras += [("", f"{hms(t)} {who}"), ("", said)]
    write_docx(HERE / "transcript_meeting.docx", paras)


def make_transcript_md(rng):
    lines = ["# Supplier call", ""]
    for t, who, said in transcript_turns(rng, 30, (10, 30)):
        lines += [f"[{t // 60:02d}:{t % 60:02d}] {who}: {said}", ""]
    (HERE / "transcript_call.md").write_text("\n".join(lines), encoding="utf-8")


def make_slides():
    from pptx import Presentation

    prs = Presentation()
    content = [
        (
            "Quarterly review",
            ["Revenue grew 12% over the quarter", "Two new warehouses opened", "Returns fell to 3.1% of orders"],
        ),
        (
            "Stock accuracy",
            [
                "Cycle counts now run weekly in every zone",
                "Discrepancies above 2% trigger a full recount",
                "Zone B still shows the largest variance, mostly in small parts",
            ],
        ),
        (
            "Risks",
            ["Label printer outages stop outbound shipping", "Supplier audit findings are due in March"]
            + [
                f"Open action item {i}: follow up on the carrier contract clause {i} "
                "and report the outcome to the steering group"
                for i in range(1, 15)
            ],
        ),
        ("Next steps", ["Approve the budget for the second phase", "Schedule safety training"]),
    ]
    for title, bullets in content:
        s = prs.slides.add_slide(prs.slide_layouts[1])
        s.shapes.title.text = title
        tf = s.placeholders[1].text_frame
        tf.text = bullets[0]
        for b in bullets[1:]:
            tf.add_paragraph().text = b
    prs.save(HERE / "slides_review.pptx")


def make_spec():
    L = [
        "# Warehouse operations specification",
        "",
        "This document specifies how stock is received, stored and shipped.",
        "",
    ]
    L += ["## 1 General provisions", "", "The rules apply to every warehouse operated by the company.", ""]
    L += ["### 1.1 Scope", "", "Receiving, storage, picking, packing and shipping are in scope. Transport is not.", ""]
    L += ["### 1.2 Terms", ""]  # heading with no body and no child
    L += ["## 2 Receiving", ""]
    L += ["### 2.1 Inbound inspection of deliveries from external suppliers and internal transfers", ""]
    L += ["#### 2.1.1 Document checks performed by the receiving clerk at the dock door", ""]
    L += ["##### 2.1.1.1 Verification of the delivery note against the purchase order in the ERP system", ""]
    L += [
        "###### 2.1.1.1.1 Handling of quantity discrepancies discovered during the verification of delivery notes",
        "",
    ]
    for i in range(6):
        L += [
            f"Paragraph {i + 1}: when the delivered quantity differs from the ordered quantity, the clerk records the "
            "difference, photographs the pallet label and informs the purchasing department within one working day. "
            "The supplier is asked to confirm the correction in writing.",
            "",
        ]
    L += [
        "## 3 Storage",
        "",
        "### 3.4 Approval",
        "",
        "#### 3.4.2 Approval of storage locations",
        "",
        "Every new location is approved by the shift lead.",
        "",
        "| Zone | Max weight (kg) | Temperature |",
        "| --- | --- | --- |",
    ]
    L += [f"| Z{i:02d} | {500 + 25 * i} | {'ambient' if i % 3 else 'chilled'} |" for i in range(1, 31)]
    L += [
        "",
        "### 3.5 Empty table header",
        "",
        "| Only | A | Header |",
        "| --- | --- | --- |",
        "",
        "## 4 Shipping",
        "",
        "Shipping rules are defined in a separate document.",
    ]
    (HERE / "spec_nested.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def make_big_table(rng):
    L = [
        "# Stock list",
        "",
        "## Inventory",
        "",
        "| SKU | Description | Zone | Quantity | Unit price |",
        "| --- | --- | --- | --- | --- |",
    ]
    items = ["pallet wrap", "carton 40x30", "label roll", "hand scanner", "safety gloves", "tape dispenser"]
    for i in range(400):
        L.append(
            f"| SKU-{1000 + i} | {rng.choice(items)} batch {i} | {rng.choice('ABCD')}{rng.randint(1, 9)} | "
            f"{rng.randint(1, 900)} | {rng.randint(1, 99)}.{rng.randint(0, 99):02d} |"
        )
    L += ["", "## Notes", "", "Counts are taken at the end of each shift."]
    (HERE / "big_table.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def make_code():
    small = "```python\ndef add(a, b):\n    return a + b\n```"
    medium = (
        "```python\n"
        + "\n".join(
            f"def handler_{i}(event, context):\n    return process(event, retries={i}, timeout={i * 10})\n"
            for i in range(8)
        )
        + "```"
    )
    huge = (
        "```sql\n"
        + "\n".join(f"INSERT INTO stock (sku, zone, qty) VALUES ('SKU-{i}', 'Z{i % 7}', {i * 3});" for i in range(120))
        + "\n```"
    )
    L = [
        "# Code notes",
        "",
        "Small helpers are kept whole.",
        "",
        small,
        "",
        "## Handlers",
        "",
        "A medium block stays atomic up to four budgets.",
        "",
        medium,
        "",
        "## Seed data",
        "",
        "The seed script is too large and gets split at line boundaries.",
        "",
        huge,
        "",
        "## Stray fence",
        "",
        "The next fence is never closed, so it must not swallow the rest.",
        "",
        "```bash",
        "echo unfinished",
        "",
    ]
    L += [f"Line {i} after the stray fence explains the deployment step number {i} in plain words." for i in range(30)]
    (HERE / "code_heavy.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def make_russian():
    L = [
        "# Регламент хранения ТМЦ",
        "",
        "## 1. Общие положения",
        "",
        "Настоящий регламент устанавливает порядок приёмки, хранения и отгрузки товарно-материальных ценностей. "
        "Требования обязательны для всех сотрудников склада.",
        "",
        "## 2. Приёмка",
        "",
        "### 2.1 Проверка документов",
        "",
    ]
    L += [
        "Кладовщик сверяет накладную с заказом поставщику. При расхождении количества составляется акт, "
        "который подписывают кладовщик и представитель перевозчика. Копия акта передаётся в отдел закупок "
        "в течение одного рабочего дня."
        for _ in range(5)
    ]
    L += [
        "",
        "## 3. Хранение",
        "",
        "| Зона | Назначение | Температура |",
        "| --- | --- | --- |",
        "| А | Сухой склад | +15…+25 |",
        "| Б | Холодильная камера | +2…+6 |",
        "",
        "## 4. Отгрузка",
        "",
        "Отгрузка выполняется только по подтверждённым заказам.",
    ]
    (HERE / "russian_regulation.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def make_generic():
    rng = random.Random(7)
    paras = []
    for i in range(12):
        paras.append(" ".join(rng.choice(SAYINGS).format(t=rng.choice(TOPICS)) for _ in range(rng.randint(1, 6))))
    (HERE / "notes_plain.txt").write_text("\n\n".join(paras) + "\n", encoding="utf-8")


if __name__ == "__main__":
    rng = random.Random(42)
    make_transcript_docx(rng)
    make_transcript_md(rng)
    make_slides()
    make_spec()
    make_big_table(rng)
    make_code()
    make_russian()
    make_generic()
    print(sorted(p.name for p in HERE.iterdir()))
