#!/usr/bin/env python3
"""Write the configuration table (`minirag.config.settings_markdown()`) into nbs/index.ipynb, between
`<!-- settings:start -->` and `<!-- settings:end -->`, then render README.md from it (tools/readme.py).

    python tools/settings_table.py           # rewrite the table in nbs/index.ipynb and README.md
    python tools/settings_table.py --check   # exit 1 if README.md's table differs from the settings table
"""
import subprocess, sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from minirag.config import README_START, README_END, readme_block, settings_markdown  # noqa: E402

INDEX, README = ROOT / "nbs" / "index.ipynb", ROOT / "README.md"


def replace_block(text: str, table: str) -> str:
    "`text` with the table between the markers replaced by `table`."
    i, j = text.find(README_START), text.find(README_END)
    if not 0 <= i < j:
        raise SystemExit(f"the {README_START} … {README_END} markers are missing; put them around the table")
    return text[: i + len(README_START)] + "\n" + table + "\n" + text[j:]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    table = settings_markdown()
    if "--check" in argv:
        ok = readme_block(README.read_text(encoding="utf-8")) == table
        print("README.md's configuration table matches config.SETTINGS" if ok else
              "README.md's configuration table is out of date: run `python tools/settings_table.py`")
        return 0 if ok else 1
    nb = nbformat.read(INDEX, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "markdown" and README_START in c.source]
    if len(cells) != 1:
        raise SystemExit(f"{INDEX} needs exactly one markdown cell holding {README_START} … {README_END}")
    cells[0].source = replace_block(cells[0].source, table)
    nbformat.write(nb, INDEX)
    return subprocess.run([sys.executable, str(ROOT / "tools" / "readme.py")], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
