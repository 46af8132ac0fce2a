#!/usr/bin/env python3
"""Execute notebooks in place so their committed outputs are fresh, small and deterministic.

Usage: python tools/run_nbs.py nbs/index.ipynb nbs/tutorials/quick_start.ipynb ...

Each notebook runs in its own fresh Python process (as nbdev-test runs it), with
execnb (no Jupyter kernel needed). Widget views are dropped from the outputs (a
static page cannot show them and their state must never be committed), then the
notebook goes through `nbdev-clean`. The run fails if an output holds an
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
    for c in nb.cells:
        if c.cell_type != "code": continue
        c.outputs = [o for o in c.get("outputs", []) if not WIDGET_MIMES & set(o.get("data", {}))]
    nb.metadata.pop("widgets", None)
    write_nb(nb, path)

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
