#!/usr/bin/env python3
"""Render nbs/index.ipynb to README.md without Quarto (nbconvert's MarkdownExporter).

    python tools/readme.py           # write README.md
    python tools/readme.py --check   # exit 1 if README.md differs from the rendering
    python tools/readme.py --stdout  # print the rendering

Rules: `#| hide` cells are dropped; other `#|` directive lines are removed from
the code shown; a code cell's outputs are kept only when they are text/markdown
(the result objects' tables) or printed text; `#| echo: false` hides a cell's
source and `#| output: false` its outputs. Relative links to notebooks point into
`nbs/`. The block between `<!-- mcp-clients:start -->` and
`<!-- mcp-clients:end -->` is taken from the existing README.md, so the section
written there by hand survives.
"""
import re, sys
from pathlib import Path
import nbformat
from nbconvert import MarkdownExporter

ROOT = Path(__file__).resolve().parents[1]
INDEX, README = ROOT/"nbs"/"index.ipynb", ROOT/"README.md"
START, END = "<!-- mcp-clients:start -->", "<!-- mcp-clients:end -->"
_DIRECTIVE = re.compile(r"^\s*#\|\s*(.*)$")
_NB_LINK = re.compile(r"\]\((?!https?://|/|#)([^)\s]+\.ipynb(?:#[^)\s]*)?)\)")

def _directives(src: str) -> dict:
    out = {}
    for line in src.splitlines():
        m = _DIRECTIVE.match(line)
        if not m: continue
        k, _, v = m.group(1).partition(":")
        out[k.strip()] = v.strip() or True
    return out

def _keep_output(o) -> bool:
    if o.output_type == "stream": return o.name == "stdout"
    if o.output_type in ("execute_result", "display_data"):
        if "text/markdown" not in o.get("data", {}): return False
        o["data"] = {"text/markdown": o["data"]["text/markdown"]}
        return True
    return False

def _prepare(nb):
    cells = []
    for c in nb.cells:
        if c.cell_type == "code":
            d = _directives(c.source)
            if d.get("hide") or d.get("default_exp") or d.get("echo") == "false" and d.get("output") == "false": continue
            c.source = "\n".join(l for l in c.source.splitlines() if not _DIRECTIVE.match(l)).strip()
            c.outputs = [] if d.get("output") == "false" else [o for o in c.get("outputs", []) if _keep_output(o)]
            if d.get("echo") == "false":  # outputs only: turn the cell into markdown
                cells += [nbformat.v4.new_markdown_cell(o["data"]["text/markdown"] if "data" in o else "```\n" + o["text"] + "```")
                          for o in c.outputs]
                continue
        elif c.cell_type == "markdown":
            c.source = _NB_LINK.sub(lambda m: f"](nbs/{m.group(1)})", c.source)
        cells.append(c)
    nb.cells = cells
    nb.metadata["language_info"] = {"name": "python"}
    return nb

def _mcp_block(readme: str) -> str | None:
    i, j = readme.find(START), readme.find(END)
    return readme[i:j + len(END)] if 0 <= i < j else None

def render(index: Path = INDEX, readme: Path = README) -> str:
    "README text rendered from the index notebook, keeping README's MCP block."
    nb = _prepare(nbformat.read(index, as_version=4))
    body, _ = MarkdownExporter(exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(nb)
    body = re.sub(r"^(# .*)\n>", r"\1\n\n>", body, count=1)
    body = re.sub(r"\n{3,}", "\n\n", body).strip() + "\n"
    if START in body and END in body:
        if readme.exists() and (kept := _mcp_block(readme.read_text(encoding="utf-8"))): body = body.replace(_mcp_block(body), kept)
    elif START in readme.read_text(encoding="utf-8") if readme.exists() else False:
        raise SystemExit(f"{index} lost the {START} … {END} markers; put them back in a markdown cell")
    return body

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--stdout" in argv: sys.stdout.write(text); return 0
    if "--check" in argv:
        cur = README.read_text(encoding="utf-8") if README.exists() else ""
        if cur == text: print("README.md matches nbs/index.ipynb"); return 0
        import difflib
        sys.stdout.writelines(list(difflib.unified_diff(cur.splitlines(True), text.splitlines(True), "README.md", "rendered"))[:80])
        print("README.md is out of date: run `python tools/readme.py`", file=sys.stderr); return 1
    README.write_text(text, encoding="utf-8"); print(f"wrote {README}"); return 0

if __name__ == "__main__": sys.exit(main())
