"Title rules R-T1..R-T3 over a table of real-looking names and headings."

from pathlib import Path
import pytest
from minirag.formats.titles import data_title, file_title, first_h1, is_boilerplate, stem_title


@pytest.mark.parametrize(
    "name",
    [
        "Untitled-1.docx",
        "IMG_20260807_123456.jpg",
        "Копия документа (2).docx",
        "DSC00042.JPG",
        "Screenshot 2026-08-07 at 12.00.01.png",
        "Снимок экрана 2026-08-07.png",
        "New Document.docx",
        "Document1.docx",
        "scan_0001.pdf",
        "abc.txt",
        "123456.pdf",
        "Новый документ.docx",
        "copy of untitled (3).md",
    ],
)
def test_uninformative_stems(name):
    assert stem_title(Path(name)) is None


@pytest.mark.parametrize(
    "name,title",
    [
        ("SPEC-112_Warehouse stock.docx", "SPEC-112 Warehouse stock"),
        ("И-112_ЗПС_Хранение ТМЗ.docx", "И-112 ЗПС Хранение ТМЗ"),
        ("scan_of_contract_acme.pdf", "scan of contract acme"),
        ("new_pricing_policy.md", "new pricing policy"),
        ("Q3 report.xlsx", "Q3 report"),
        ("ERR_1042.md", "ERR 1042"),
    ],
)
def test_informative_stems(name, title):
    assert stem_title(Path(name)) == title


@pytest.mark.parametrize(
    "h",
    [
        "Introduction",
        "Table of contents",
        "Contents",
        "1. General provisions",
        "General",
        "Overview",
        "Лист изменений",
        "Содержание",
        "Оглавление",
        "1. Общие положения",
        "Введение",
        "![](logo.png)",
        "![Company logo](a.png)",
        "2.",
        "INTRODUCTION:",
        "1 Introduction",
        "I. Introduction",
        "**Table of Contents**",
    ],
)
def test_boilerplate(h):
    assert is_boilerplate(h)


@pytest.mark.parametrize(
    "h",
    [
        "Introduction to warehouse robotics",
        "Warehouse stock policy",
        "Регламент хранения",
        "General Motors supplier terms",
    ],
)
def test_not_boilerplate(h):
    assert not is_boilerplate(h)


def test_order():
    md_h1 = "# Stock policy\n\nBody."
    assert file_title("Meta title", md_h1, Path("SPEC-1 x.docx")) == "Meta title"  # metadata first
    assert file_title(None, md_h1, Path("SPEC-1 x.docx")) == "Stock policy"  # then a real H1
    assert file_title(None, "# Introduction\n\nx", Path("SPEC-1_x.docx")) == "SPEC-1 x"  # boilerplate H1 → stem
    assert file_title(None, "# Introduction\n\nx", Path("IMG_0001.docx")) == "Introduction"  # bad stem → H1 anyway
    assert file_title(None, "no heading", Path("IMG_0001.docx")) == "IMG_0001"  # last resort: the stem
    assert file_title(None, "## Only H2\n\n# Later H1", Path("a.md")) == "Later H1"
    assert file_title(None, "```\n# comment\n```\nplain", Path("Report_2026.md")) == "Report 2026"


def test_data_title():
    assert data_title(None, "# Release notes\n\nx") == "Release notes"
    assert data_title(None, "# Содержание\n\nx") is None
    assert data_title(None, "plain text only") is None
    assert data_title("", "plain") is None
    assert data_title("My notes", "# Other") == "My notes"


def test_first_h1_strips_markup():
    assert first_h1("# [Warehouse](http://x) *stock* policy ##\n") == "Warehouse stock policy"


# ---- metadata titles that are real, front matter, commands that are not headings ----------------
from minirag.formats.titles import is_command_like, real_meta_title, split_front_matter


@pytest.mark.parametrize(
    "h",
    [
        "netstat -tupan",
        "apt-get install task-desktop",
        "$ make",
        "cp debian.iso /dev/sdX",
        "PermitRootLogin no",
        "GRUB_TIMEOUT=5",
        "/etc/apt/sources.list",
        "user@host:~$ ls -la",
        "sudo reboot",
        "deb http://deb.debian.org/debian bookworm main",
        "dpkg -l | grep linux-image",
        "ls > files.txt",
        "install.sh",
    ],
)
def test_command_like(h):
    assert is_command_like(h)


@pytest.mark.parametrize(
    "h",
    [
        "Warehouse stock policy",
        "Debian GNU/Linux Installation Guide",
        "Installing Debian GNU/Linux",
        "Регламент хранения ТМЦ",
        "Make your own packages",
        "Find what you need",
        "C# for beginners",
        "Release notes 2.1",
        "Часто задаваемые вопросы о Debian GNU/Linux",
        "Q&A: backups",
    ],
)
def test_not_command_like(h):
    assert not is_command_like(h)


@pytest.mark.parametrize(
    "t",
    [
        "Microsoft Word - report.doc",
        "Microsoft PowerPoint - deck.ppt",
        "Untitled",
        "untitled document",
        "Document1",
        "Presentation",
        "PowerPoint Presentation",
        "Презентация PowerPoint",
        "C:\\Users\\ivan\\Desktop\\a.docx",
        "report_final_v2.pdf",
        "cp debian.iso /dev/sdX",
        "",
        "   ",
        None,
        "1234",
    ],
)
def test_machine_meta_titles_are_not_titles(t):
    assert real_meta_title(t) is None


def test_meta_title_order():
    md = "# cp debian.iso /dev/sdX\n\nWrite the image to a stick."
    assert (
        file_title("Debian GNU/Linux Installation Guide", md, Path("install.en.pdf"))
        == "Debian GNU/Linux Installation Guide"
    )
    assert (
        file_title("Microsoft Word - install.doc", md, Path("install.en.pdf")) == "install.en"
    )  # command H1 skipped too
    assert file_title(None, "# $ apt-get update\n\n# Keeping the system current\n", Path("IMG_1.md")) == "IMG_1"
    assert data_title(None, "# netstat -tupan\n\noutput") is None


@pytest.mark.parametrize(
    "md,title,body",
    [
        ("---\ntitle: Stock policy\n---\nBody\n", "Stock policy", "Body\n"),
        ('---\ntitle: "Q3: results"\ndate: 2026-01-02\n---\n\n# H\n', "Q3: results", "# H\n"),
        ("---\nlayout: post\ntitle: 'It''s done' # comment\n...\nBody", "It's done", "Body"),
        ("---\nlayout: post\n---\nBody", None, "Body"),
        ("---\n\nNot front matter, a rule\n", None, "---\n\nNot front matter, a rule\n"),
        ("Text\n---\ntitle: x\n---\n", None, "Text\n---\ntitle: x\n---\n"),
    ],
)
def test_front_matter(md, title, body):
    assert split_front_matter(md) == (title, body)
