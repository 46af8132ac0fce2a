"""Office documents through the installed CLI: real OpenDocument, legacy Excel/Word files, RTF in cp1251, saved mail,
WebVTT captions, and hostile ones (password ODF, zip bomb, truncated, empty, files in another format's clothes, a mail
of 100 nested mails and a bomb attached). One `sync` indexes them all; each file is read or failed with a reason."""

import gzip, json, os, shutil, struct, subprocess, sys, zipfile
import olefile
from email.message import EmailMessage
from pathlib import Path
import pytest
import system_tools
from conftest import said

CLI = str(Path(sys.executable).parent / "minirag-mcp")
DATA = Path(__file__).parent / "data" / "office"
ENV_VARS = ["BASE_DIR", "BASE_DIRS", "DB_PATH", "CACHE_DIR", "MODEL_NAME", "MAX_FILE_SIZE"]
ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/"'
)
RTF_1251 = (
    r"{\rtf1\ansi\ansicpg1251{\fonttbl{\f0 Times New Roman;}}\f0 "
    r"\'cf\'f0\'e8\'ea\'e0\'e7 \'ee \'ee\'f2\'EF\'F3\'F1\'EA\'E5\par Second paragraph about leave.\par}"
)
VTT = """WEBVTT

00:00:01.000 --> 00:00:04.000
<v Anna>Good morning, the budget review starts now.</v>

00:00:04.000 --> 00:00:06.000
<v Anna>Good morning, the budget review starts now.</v>

00:02:10.000 --> 00:02:14.000
<v Boris>The warehouse lease ends in March.</v>

00:04:30.000 --> 00:04:33.000
<v Anna>Then we vote on the lease.</v>
"""


def odt(p: Path, body: str, meta: str = "", manifest: str = "") -> Path:
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("META-INF/manifest.xml", f"<manifest:manifest {ODF_NS}>{manifest}</manifest:manifest>")
        z.writestr(
            "meta.xml", f"<office:document-meta {ODF_NS}><office:meta>{meta}</office:meta></office:document-meta>"
        )
        z.writestr(
            "content.xml",
            f"<office:document-content {ODF_NS}><office:body><office:text>{body}"
            "</office:text></office:body></office:document-content>",
        )
    return p


def mail(subject: str, body: str, attachments=()) -> EmailMessage:
    m = EmailMessage()
    m["Subject"], m["From"], m["To"] = subject, "Анна Петрова <anna@example.org>", "office@example.org"
    m["Date"] = "Tue, 01 Dec 2026 10:00:00 +0300"
    m.set_content(body)
    for name, data in attachments:
        if isinstance(data, EmailMessage):
            m.add_attachment(data)
        else:
            m.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return m


def word6(dest: Path, text: bytes, lid: int = 0x0419, clx_at: int = 0) -> Path:
    "A Word 6 document written per the format (FIB, then 8-bit text) into a real Word 97 file's OLE container."
    stream = bytearray(4096)  # the size of test-ole-file.doc's WordDocument stream, rewritten in place
    struct.pack_into("<4H", stream, 0, 0xA5DC, 0x65, 0x6027, lid)  # wIdent, nFib 101 (Word 6), nProduct, language
    struct.pack_into("<II", stream, 0x18, 0x400, 0x400 + len(text))  # fcMin, fcMac
    struct.pack_into("<I", stream, 0x34, len(text))  # ccpText
    stream[0x400 : 0x400 + len(text)] = text
    if clx_at:  # fast-saved, its piece table where the FIB says (past the stream's end: a damaged file)
        struct.pack_into("<H", stream, 0x0A, 0x4)
        struct.pack_into("<II", stream, 0x160, clx_at, 21)
    shutil.copy(DATA / "test-ole-file.doc", dest)
    with olefile.OleFileIO(str(dest), write_mode=True) as ole:
        ole.write_stream("WordDocument", bytes(stream))
    return dest


def cli(*args, env, cwd):
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def office(tmp_path_factory, model_dir):
    "A root of real and hostile office files, synced once through the CLI: (root, env, sync result, stderr)."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("office"))) / "docs"
    root.mkdir()
    for f in DATA.iterdir():
        if f.suffix == ".gz":  # kept packed in the repository (a LibreOffice .ppt is mostly zeros)
            (root / f.stem).write_bytes(gzip.decompress(f.read_bytes()))
        elif f.suffix != ".md":
            shutil.copy(f, root / f.name)
    odt(
        root / "plan.odt",
        '<text:h text:outline-level="1">Harbour plan</text:h><text:p>Dredging starts in May.</text:p>',
        meta="<dc:title>Harbour dredging plan</dc:title>",
    )
    odt(
        root / "secret.odt",
        "<text:p>x</text:p>",
        manifest="<manifest:file-entry><manifest:encryption-data/></manifest:file-entry>",
    )
    with zipfile.ZipFile(root / "bomb.odt", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", b"<a>" + b" " * 100_000_000 + b"</a>")
    with zipfile.ZipFile(root / "bomb.ods", "w", zipfile.ZIP_DEFLATED) as z:  # calamine would inflate it whole
        z.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("content.xml", b"<a>" + b" " * 100_000_000 + b"</a>")
    (root / "cut.ods").write_bytes((DATA / "pythagoras.ods").read_bytes()[:1500])
    (root / "empty.odp").write_bytes(b"")
    (root / "order.rtf").write_text(RTF_1251, encoding="ascii")
    (root / "memo.doc").write_text(RTF_1251, encoding="ascii")  # Word saved it as RTF under .doc
    (root / "export.xls").write_text(
        "<html><body><table><tr><th>Ship</th><th>Berth</th></tr>"
        "<tr><td>Kestrel</td><td>4</td></tr></table></body></html>"
    )
    (root / "report.xls").write_text("ship;tonnage\nOsprey;1200\n")
    (root / "fake.ppt").write_bytes(b"\x00\x01garbage" * 50)
    (root / "cut.ppt").write_bytes((DATA / "dedoc_example.ppt").read_bytes()[:20_000])  # an OLE file cut short
    (root / "call.vtt").write_text(VTT)
    word6(root / "order95.doc", "Приказ об отпуске\rОтдел кадров уходит в отпуск в мае.\r".encode("cp1251"))
    word6(root / "cut95.doc", b"Plan\r", clx_at=5000)
    shutil.copy(DATA / "test-ole-file.doc", root / "locked.doc")  # a real Word 97 file, its fEncrypted bit set
    with olefile.OleFileIO(str(root / "locked.doc"), write_mode=True) as ole:
        fib = bytearray(ole.openstream("WordDocument").read())
        fib[0x0B] |= 0x01
        ole.write_stream("WordDocument", bytes(fib))
    (root / "invoice.eml").write_bytes(
        bytes(
            mail(
                "Счёт за аренду склада",
                "The lease invoice is attached.\n",
                [
                    ("lease.ods", (DATA / "pythagoras.ods").read_bytes()),
                    ("logo.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
                ],
            )
        )
    )
    nest = mail("Innermost", "The innermost note mentions the albatross.\n")
    for k in range(100):
        nest = mail(f"Fwd {k}", f"Forward number {k}.\n", [("fwd.eml", nest)])
    (root / "nested.eml").write_bytes(bytes(nest))
    (root / "bombmail.eml").write_bytes(
        bytes(mail("Bomb", "A bomb is attached.\n", [("bomb.odt", (root / "bomb.odt").read_bytes())]))
    )
    for name in (".~lock.plan.odt#", "~$memo.doc", "notes.pages", "old.pages", "talk.key"):
        (root / name).write_bytes(b"not a document we read")
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    env.update(
        BASE_DIR=str(root), DB_PATH=str(root.parent / "idx"), MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent)
    )
    r = cli("sync", "--json", env=env, cwd=root)
    assert r.returncode == 1 and r.stdout.startswith("{"), r.stderr  # 1: some files failed, and said why
    return root, env, json.loads(r.stdout), r.stderr


def read(office, name):
    root, env, _, _ = office
    r = cli("read", name, "--json", env=env, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_hostile_office_files_fail_with_a_reason_naming_file_and_cause(office):
    root, _, res, err = office
    assert "Traceback" not in err and 'File "' not in err
    why = {Path(w.split(": ", 1)[0]).name: w for w in said(res) if w.startswith(str(root))}
    assert "password-protected" in why["secret.odt"]
    assert "zip bomb" in why["bomb.odt"] and "zip bomb" in why["bomb.ods"]
    assert "corrupt or truncated" in why["cut.ods"]
    assert "empty (0 bytes)" in why["empty.odp"]
    assert "not a .ppt file" in why["fake.ppt"]
    assert "not a readable .ppt file (corrupt or truncated" in why["cut.ppt"]
    assert "not a readable Word 6/95 file (the piece table of a fast-saved file lies outside" in why["cut95.doc"]
    assert "the .doc file is password-protected" in why["locked.doc"]
    # Word 97 files need antiword: on a machine without it they fail naming the apt-get line, and only then
    no_antiword = {n for n, w in why.items() if "need antiword; install it with apt-get install antiword" in w}
    word97 = {"alpaca_tz.doc", "dedoc_example.doc", "test-ole-file.doc"}
    assert no_antiword == (word97 if system_tools.problem("antiword") else set()), no_antiword
    assert res["failed"] == 9 + len(no_antiword), "\n".join(said(res))


def test_real_opendocument_and_legacy_excel_keep_their_structure(office):
    assert (
        read(office, "simpletable.odt")["text"]
        == "| Cell 1 | Cell 2 |\n| --- | --- |\n| Cell 3 (bold) | Cell 4 (italic) |"
    )
    slides = read(office, "ol.odp")["text"]
    assert slides.startswith("<!-- Slide number: 1 -->") and "# OL" in slides
    sheet = read(office, "formula_test_sjmachin.xls")["text"]
    assert sheet.startswith("## Sheet1") and "МОСКВА Москва" in sheet and "nan" not in sheet.lower().split()
    assert read(office, "pythagoras.ods")["text"].startswith("## Sheet1\n\n| 3 |")


def test_titles_come_from_odf_metadata_and_mail_subject(office):
    plan = read(office, "plan.odt")
    assert plan["title"] == "Harbour dredging plan" and plan["text"].startswith("# Harbour plan")
    assert read(office, "invoice.eml")["title"] == "Счёт за аренду склада"


def test_cp1251_rtf_is_cyrillic_and_a_doc_that_is_rtf_reads_as_rtf(office):
    for name in ("order.rtf", "memo.doc"):
        assert read(office, name)["text"].startswith("Приказ о отпуске\n\nSecond paragraph"), name


def test_an_xls_that_is_html_or_csv_reads_as_a_table(office):
    assert "| Kestrel | 4 |" in read(office, "export.xls")["text"]
    assert "| Osprey | 1200 |" in read(office, "report.xls")["text"]


def test_mail_has_header_block_body_and_attachments_as_sections(office):
    text = read(office, "invoice.eml")["text"]
    assert "**From:** Анна Петрова <anna@example.org>" in text and "**Date:** Tue, 01 Dec 2026" in text
    assert "The lease invoice is attached." in text
    assert "## lease.ods\n\n### Sheet1" in text and "logo.png" not in text


def test_a_mail_of_100_nested_mails_and_one_with_a_bomb_attached_are_bounded(office):
    root, _, res, _ = office
    nested = read(office, "nested.eml")["text"]
    assert "Forward number 99." in nested and "albatross" not in nested  # depth bounded, the rest named in a warning
    assert any(w.startswith(str(root / "nested.eml")) and "nested deeper" in w for w in said(res)), said(res)
    bomb = read(office, "bombmail.eml")["text"]
    assert "A bomb is attached." in bomb
    assert any("bombmail.eml" in w and "zip bomb" in w for w in said(res)), said(res)


def test_captions_become_a_transcript_in_time_windows(office):
    doc = read(office, "call.vtt")
    assert (
        doc["text"].count("Good morning") == 1 and "00:02:10 Boris: The warehouse lease ends in March." in doc["text"]
    )
    assert doc["chunkCount"] == 3  # cues at 0:01, 2:10 and 4:30 fall in three two-minute windows
    root, env, _, _ = office
    r = cli("query", "warehouse lease", "--json", env=env, cwd=root)
    hits = [h for h in json.loads(r.stdout)["results"] if h["source"].endswith("call.vtt")]
    assert hits[0]["text"] == "00:02:10 Boris: The warehouse lease ends in March.", hits


@pytest.mark.requires_tool("antiword")
def test_legacy_word_reads_through_antiword(office):
    assert read(office, "test-ole-file.doc")["text"] == "Test OLE file, saved as Word 97-2003 Document."


def test_lock_files_are_passed_over_and_other_types_counted_per_extension(office):
    root, env, res, err = office
    assert ".~lock" not in err + json.dumps(res) and "~$memo" not in err + json.dumps(res)
    assert res["skippedByFormat"] == {".pages": 2, ".key": 1}
    sub = root / "sub"
    sub.mkdir(exist_ok=True)
    (sub / "a.pages").write_bytes(b"x")
    (sub / "b.md").write_text("# Sub note\n\nThe sub note about pelicans.\n")
    r = cli("ingest", "sub", env=env, cwd=root)
    assert r.returncode == 0 and "not read (type): .pages 1" in r.stdout, r.stdout + r.stderr


def test_read_on_a_type_not_read_says_so(office):
    root, env, _, _ = office
    r = cli("read", "notes.pages", env=env, cwd=root)
    assert r.returncode != 0 and "a .pages file, a type minirag does not read" in r.stderr, r.stderr
    assert "ingest it or run sync" not in r.stderr


# ---- Outlook mail, real legacy Russian files, titles from the OLE summary information ---------------------------


def test_outlook_msg_reads_as_a_mail_with_its_attached_item(office):
    pytest.importorskip("extract_msg", reason="needs the outlook extra: pip install 'minirag[outlook]'")
    doc = read(office, "outer.msg")
    assert doc["title"] == "outer subject"
    assert doc["text"].startswith("# outer subject\n\n**To:** outer@foo.bar <outer@foo.bar>\n\nOuter body\n\n## test")
    assert "**To:** test@foobar.com <test@foobar.com>\n\nbody" in doc["text"]  # the attached Outlook item, as a section
    news = read(office, "newsletter.msg")
    assert news["title"] == "Newsletter Prüfung Personalwesen / Prüfung Eröffnungsbilanz"
    assert "**From:** <NueblingV@w-vwa.de>" in news["text"] and "**Date:** Mon, 18 Sep 2017 10:00:18" in news["text"]
    assert "Sehr geehrte Frau Gaiser-Schönenborn" in news["text"]
    assert "## newsletter.png" not in news["text"]  # pictures are not a type we read


def test_msg_without_the_outlook_extra_fails_with_the_pip_line(monkeypatch, tmp_path):
    from minirag.config import MiniragError, load_config
    from minirag.formats.convert import convert_file

    monkeypatch.setitem(sys.modules, "extract_msg", None)  # as on a base install: the import fails
    shutil.copy(DATA / "outer.msg", tmp_path / "outer.msg")
    with pytest.raises(MiniragError) as e:
        convert_file(tmp_path / "outer.msg", load_config({"BASE_DIR": str(tmp_path)}))
    assert str(e.value) == (
        f"{tmp_path / 'outer.msg'}: Outlook .msg files need the outlook extra; "
        "install it with pip install 'minirag[outlook]'"
    )


def test_a_broken_msg_fails_naming_file_and_cause(tmp_path):
    pytest.importorskip("extract_msg", reason="needs the outlook extra: pip install 'minirag[outlook]'")
    from minirag.config import MiniragError, load_config
    from minirag.formats.convert import convert_file

    (tmp_path / "cut.msg").write_bytes((DATA / "outer.msg").read_bytes()[:3000])
    with pytest.raises(MiniragError, match=r"cut\.msg: not a readable \.msg file \(.+\); the file may be corrupt"):
        convert_file(tmp_path / "cut.msg", load_config({"BASE_DIR": str(tmp_path)}))


@pytest.mark.requires_tool("antiword")
def test_real_russian_word_files_come_out_cyrillic_with_their_summary_title(office):
    doc = read(office, "dedoc_example.doc")
    assert doc["title"] == "documetn title"  # the summary information's title (misspelt in the original)
    assert doc["text"].startswith("Пример документа\n\nГлава 1")
    assert "| Фамилия | Имя | Отчество |\n| --- | --- | --- |\n| Иванов | Иван | Иванович |" in doc["text"]
    assert "Ð" not in doc["text"] and "Ï" not in doc["text"]  # UTF-8 read as Latin-1 would show these
    tz = read(office, "alpaca_tz.doc")
    assert "ТЕХНИЧЕСКОЕ ЗАДАНИЕ" in tz["text"] and tz["title"] == "alpaca tz"  # an empty summary title: the stem


def test_real_powerpoint_97_file_keeps_every_slide_its_subtitle_and_its_table(office):
    slides = read(office, "dedoc_example.ppt")["text"].split("<!-- Slide number: ")
    assert slides[0] == "" and len(slides) == 3, slides
    first, second = slides[1], slides[2]
    assert first.startswith("1 -->\n\n# Example\n\n")  # the title placeholder is the slide's heading
    assert "A long time ago in a galaxy far far away" in first and "Some author" in first  # body and subtitle
    assert "Click to edit" not in first + second  # the master slide's template text is not a slide
    # the second slide is a table and a text box: the cells land on their rows and columns
    assert "|  | Header1 | Header2 | Header3 |\n| --- | --- | --- | --- |\n| Some content | A | B | C |" in second
    assert "This is simple table" in second


def test_powerpoint_97_file_written_by_libreoffice_keeps_its_bullets_table_and_notes(office):
    text = read(office, "libreoffice_dredging.ppt")["text"]  # catppt reads no word of this file
    assert text.startswith("<!-- Slide number: 1 -->\n\n# Harbour dredging plan\n\nPort authority, spring 2026\n\n")
    assert "# Schedule\n\n- Survey the channel in March\n  - Dredge berths four to six" in text  # body: bullets
    assert "### Notes:\n\nMention the tide tables to the board" in text  # the notes page of slide 2
    assert "# Costs\n\n| Item | Euro |\n| --- | --- |\n| Survey | 12000 |\n| Dredging | 480000 |" in text
    assert text.endswith("Figures exclude VAT") and text.count("<!-- Slide number:") == 3


def test_powerpoint_97_lists_nest_and_number_by_level_and_embedded_files_show_their_name(office):
    text = read(office, "libreoffice_ol.ppt")["text"]  # odfpy's ol.odp saved as .ppt by LibreOffice
    assert "1. Eins\n2. Tsvey\n   1. Dray\n   2. Fir\n3. Finf" in text  # numbered, as in the .odp
    assert "      1. Nayn\n      2. Tsen\n         1. Elf\n         2. Tsvelf\n            1. Draytsn" in text
    assert text.split("# OL\n\n")[1] == read(office, "ol.odp")["text"].split("# OL\n\n")[1]
    embedded = read(office, "oletools_embedded.ppt")["text"]
    assert embedded.endswith("- It is a simple harmless ASCII text file\n\nsimple-text-file.txt (embedded file)")


def test_word_95_file_in_cp1251_comes_out_cyrillic_without_any_tool(office, monkeypatch):
    from minirag.config import load_config
    from minirag.formats.convert import convert_file

    assert read(office, "order95.doc")["text"] == "Приказ об отпуске\n\nОтдел кадров уходит в отпуск в мае."
    root = office[0]
    monkeypatch.setenv("PATH", str(root / "no-tools"))  # neither antiword nor catdoc can be found
    md = convert_file(root / "order95.doc", load_config({"BASE_DIR": str(root)})).markdown
    assert md == "Приказ об отпуске\n\nОтдел кадров уходит в отпуск в мае."


def test_a_doc_that_is_really_opendocument_reads_as_odt(office):
    text = read(office, "ukrf.doc")["text"]
    assert "Статья 1. Уголовное законодательство Российской Федерации" in text
    assert "| Столбец | Строка |\n| --- | --- |\n| Первый | Второй |" in text
