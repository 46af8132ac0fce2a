#!/usr/bin/env python3
"""Execute notebooks in place so their committed outputs are fresh, small and deterministic.

Usage: python tools/run_nbs.py nbs/index.ipynb nbs/tutorials/quick_start.ipynb ...

Each notebook runs in its own fresh Python process (as nbdev-test runs it), with
execnb (no Jupyter kernel needed). Widget views are dropped from the outputs (a
static page cannot show them and their state must never be committed; an
explorer's static `text/html` snapshot stays), outputs are written into the file
as it is then (cells edited meanwhile keep theirs), then the notebook goes
through `nbdev-clean`. The run fails if an output holds an
absolute temp/home path, a memory address or a timestamp (see tools/nbcheck.py).
"""
import os, subprocess, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nbcheck import nondeterministic_outputs, WIDGET_MIMES  # noqa: E402

def _run_one(path: Path):
    from execnb.shell import CaptureShell
    from fastcore.nbio import read_nb, write_nb
    path = path.resolve()
    nb = read_nb(path)
    sh = CaptureShell()
    sh.set_path(path.parent.resolve())
    os.chdir(path.parent)  # notebooks read fixtures by relative path, as under nbdev-test
    sh.run_all(nb, exc_stop=True)
    outputs = {c.get("id"): (c.source, strip_widget_views(c.get("outputs", []))) for c in nb.cells if c.cell_type == "code"}
    # Others may edit other cells while this runs: write outputs into the file as it is now, cell by unchanged cell.
    cur = read_nb(path)
    for c in cur.cells:
        src, outs = outputs.get(c.get("id"), (None, None))
        if c.cell_type == "code" and src == c.source: c.outputs = outs
    cur.metadata.pop("widgets", None)
    write_nb(cur, path)

def strip_widget_views(outputs: list) -> list:
    "Outputs without widget views (a static page cannot draw them); an explorer's `text/html` snapshot stays."
    out = []
    for o in outputs:
        data = {k: v for k, v in o.get("data", {}).items() if k not in WIDGET_MIMES}
        if "data" in o and not set(data) - {"text/plain"} and WIDGET_MIMES & set(o["data"]): continue  # a bare widget
        if "data" in o: o["data"] = data
        out.append(o)
    return out

def main(paths):
    bad = 0
    for p in map(Path, paths):
        r = subprocess.run([sys.executable, __file__, "--child", str(p)])
        if r.returncode: print(f"FAILED: {p}", file=sys.stderr); bad += 1; continue
        subprocess.run(["nbdev-clean", "--fname", str(p)], check=True)
        problems = nondeterministic_outputs(p)
        for m in problems: print(f"{p}: {m}", file=sys.stderr)
        bad += bool(problems)
        print(f"ran {p}")
    return 1 if bad else 0

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--child"]
    if "--child" in sys.argv: _run_one(Path(args[0])); sys.exit(0)
    sys.exit(main(args))
