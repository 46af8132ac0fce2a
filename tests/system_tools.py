"""System tools some tests and notebook cells need, which pip cannot install: how to check each, which apt packages
bring it.

Missing tool → the test (or the notebook cells flagged `#| <tool>`) is skipped with the apt-get line as the reason.
With MINIRAG_REQUIRE_SYSTEM_TOOLS=1 (set by .ci/run, which installs them) a missing tool is a failure instead.

Command line (used by the Makefile's nbtest target and .ci/run):
  python3 tests/system_tools.py --nbdev-flags    # the tool flags nbdev-test can run here, space separated
  python3 tests/system_tools.py --check          # one line per missing notebook tool; exit 1 if missing and required
  python3 tests/system_tools.py --apt-packages   # every Debian package in TOOLS (what .ci/run installs)

To add a tool: one line in TOOLS; mark tests `@pytest.mark.requires_tool("name")`, notebook cells `#| name`
(and add `name` to `tst_flags` in pyproject.toml).
"""

import os, shutil, subprocess, sys, tomllib
from functools import lru_cache
from pathlib import Path

REQUIRE_ENV = "MINIRAG_REQUIRE_SYSTEM_TOOLS"

# tool -> Debian packages that bring it (with the language data the tests read)
TOOLS = {
    "tesseract": "tesseract-ocr tesseract-ocr-rus tesseract-ocr-eng",
    "pdftotext": "poppler-utils",
    "pandoc": "pandoc",
    # legacy binary Word (.doc): minirag.formats.word runs antiword when present, catdoc for the files antiword refuses
    "antiword": "antiword",
    "catdoc": "catdoc",
    # man pages (roff, plain or compressed): minirag.formats.manpage renders them with mandoc when present
    "mandoc": "mandoc",
    # tests/test_read_whole.py compares minirag's man pages with `man -l` (man-db, over groff), an independent renderer
    "man": "man-db",
    # tests/test_docs.py opens the rendered docs in it (selenium + chromedriver)
    "chromium": "chromium chromium-driver",
    # tests/test_lake*.py start a real server in a temporary folder (tests/pg.py), as an unprivileged user; locales:
    # the ru_RU source its Russian-messages run compiles
    "postgresql": "postgresql locales",
}


def postgres_bin() -> Path | None:
    "The folder of Debian's PostgreSQL server programs (initdb, pg_ctl, postgres), newest version first."
    versions = Path("/usr/lib/postgresql").glob("*/bin")
    for d in sorted(versions, key=lambda p: -int(p.parent.name) if p.parent.name.isdigit() else 0):
        if (d / "initdb").exists() and (d / "pg_ctl").exists():
            return d
    return None


def required() -> bool:
    "True when a missing tool must fail the run (CI) rather than skip."
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0", "false", "no")


@lru_cache(maxsize=None)
def problem(name: str) -> str | None:
    "Why `name` cannot be used on this machine, or None when it can."
    if name not in TOOLS:
        raise KeyError(f"unknown system tool {name!r}; known: {', '.join(TOOLS)}")
    if name == "postgresql":  # its server programs are not on PATH in Debian
        return None if postgres_bin() else "PostgreSQL's initdb/pg_ctl are not under /usr/lib/postgresql/*/bin"
    exe = shutil.which(name)
    if not exe:
        return f"{name} is not on PATH"
    if name == "tesseract":  # the OCR tests read Russian and English
        try:
            out = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError) as e:
            return f"tesseract does not run ({e})"
        lack = {"rus", "eng"} - {l.strip() for l in out.splitlines()[1:]}
        if lack:
            return f"tesseract lacks the {'+'.join(sorted(lack))} language data"
    return None


def reason(name: str) -> str:
    "The skip/fail reason for a missing `name`: what is wrong and the apt-get line that fixes it."
    return f"{problem(name)} (install: apt-get install {TOOLS[name]})"


def notebook_tools() -> list[str]:
    "Tools that flag notebook cells: those named in `tst_flags` of pyproject.toml."
    cfg = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    flags = cfg.get("tool", {}).get("nbdev", {}).get("tst_flags", "").split()
    return [t for t in TOOLS if t in flags]


def main(argv: list[str]) -> int:
    if argv == ["--nbdev-flags"]:
        print(" ".join(t for t in notebook_tools() if problem(t) is None))
        return 0
    if argv == ["--apt-packages"]:
        print(" ".join(TOOLS.values()))
        return 0
    if argv == ["--check"]:
        missing = [t for t in notebook_tools() if problem(t)]
        for t in missing:
            verb = "FAIL" if required() else "skipped"
            print(f"system tools: notebook cells flagged '#| {t}' {verb}: {reason(t)}", file=sys.stderr)
        if missing and required():
            print(f"system tools: {REQUIRE_ENV}=1 requires every tool above", file=sys.stderr)
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
