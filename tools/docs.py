#!/usr/bin/env python3
"""Build the documentation without nbdev's Quarto wrappers.

    python tools/docs.py            # process nbs/ into _proc/ (+ _quarto.yml); run `quarto render` if Quarto exists
    python tools/docs.py --html DIR # also render every processed page to DIR with nbconvert (no Quarto needed)

`nbdev-proc-nbs` (nbdev 3.3.26) calls `_ensure_quarto()`, which downloads Quarto when
it is missing, and writes `nbs/nbdev.yml`/`nbs/_quarto.yml`; this script runs the same
notebook processors (`nbdev.processors.FilterDefaults`: show_doc, hide, export
cleaning…) and stages the repository-root `_quarto.yml` instead.
"""
import os, shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT/"nbs"
SITE_FILES = ("sidebar.yml", "styles.css")

def notebooks(nbs: Path = NBS) -> list:
    "Every notebook nbdev would render (folders starting with `_` or `.` skipped)."
    return sorted(p for p in nbs.rglob("*.ipynb")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(nbs).parts))

def process_nb(src: Path, dest: Path) -> Path:
    "Run nbdev's doc processors on one notebook, writing the page Quarto would render."
    from fastcore.nbio import read_nb, write_nb
    from nbdev.processors import FilterDefaults
    nb = read_nb(src)
    cwd = os.getcwd()
    os.chdir(src.parent)  # cells run to render docs read fixtures relative to the notebook, as under nbdev-test
    try: FilterDefaults()(nb)
    finally: os.chdir(cwd)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_nb(nb, dest)
    return dest

def render_html(page: Path) -> str:
    "A processed page as standalone HTML (nbconvert; stands in for Quarto)."
    import json, nbformat
    from nbconvert import HTMLExporter
    return HTMLExporter().from_notebook_node(read_page(page))[0]

_CELL_KEYS = {"cell_type", "source", "metadata", "outputs", "execution_count", "id", "attachments"}

def read_page(page: Path):
    "A processed page as an nbformat node (nbdev leaves private keys such as `has_sd` on cells)."
    import json, nbformat
    d = json.loads(Path(page).read_text(encoding="utf-8"))
    for c in d["cells"]:
        for k in set(c) - _CELL_KEYS: del c[k]
        c.get("metadata", {}).pop("execution", None)  # timings execnb adds while running show_doc cells
    return nbformat.reads(json.dumps(d), as_version=4)

def stage(out: Path = ROOT/"_proc") -> list:
    "Process every notebook into `out` next to `_quarto.yml` and the site files; returns the pages."
    pages, failed = [], []
    for nb in notebooks():
        try: pages.append(process_nb(nb, out/nb.relative_to(NBS)))
        except Exception as e: failed.append(nb); print(f"FAILED {nb.relative_to(ROOT)}: {str(e)[-300:]}", file=sys.stderr)
    if failed: raise SystemExit(f"{len(failed)} notebooks failed to process: {', '.join(str(f.relative_to(NBS)) for f in failed)}")
    shutil.copy2(ROOT/"_quarto.yml", out/"_quarto.yml")
    for f in SITE_FILES: shutil.copy2(NBS/f, out/f)
    return pages

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = ROOT/"_proc"
    pages = stage(out)
    print(f"processed {len(pages)} notebooks into {out.relative_to(ROOT)}/")
    if "--html" in argv:
        dest = Path(argv[argv.index("--html") + 1])
        for p in pages:
            h = dest/p.relative_to(out).with_suffix(".html"); h.parent.mkdir(parents=True, exist_ok=True)
            h.write_text(render_html(p), encoding="utf-8")
        print(f"rendered {len(pages)} pages into {dest}/")
    elif shutil.which("quarto"): return subprocess.run(["quarto", "render", str(out)]).returncode
    else: print("Quarto is not installed: pages processed, not rendered (use --html DIR for a preview)")
    return 0

if __name__ == "__main__": sys.exit(main())
