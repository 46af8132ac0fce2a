#!/usr/bin/env python3
"""Execute notebooks in place so their committed outputs are fresh, small and deterministic.

Usage: python tools/run_nbs.py nbs/index.ipynb nbs/tutorials/quick_start.ipynb ...
       python tools/run_nbs.py --child NB --out FILE   # run NB, write the executed copy to FILE (NB untouched)

Each notebook runs in its own fresh Python process (as nbdev-test runs it), with
execnb (no Jupyter kernel needed), in the notebook's folder, and runs the cells
nbdev-test runs when given no flags: a cell marked `#| eval: false` or with one of
`tst_flags` (slow, tesseract, antiword) is left out and keeps no output, so what is
saved does not depend on which system tools a machine has. Widget views are dropped from the outputs (a
static page cannot show them and their state must never be committed; an
explorer's static `text/html` snapshot stays), outputs are written into the file
as it is then (cells edited meanwhile keep theirs), then the notebook goes
through `nbdev-clean`. The run fails if an output holds an
absolute temp/home path, a memory address or a timestamp (see tools/nbcheck.py).
"""
import os, re, subprocess, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nbcheck import nondeterministic_outputs, PATTERNS, WIDGET_MIMES  # noqa: E402

def cells_run(path: Path) -> set:
    "Ids of the cells nbdev-test runs in `path` with no flags (`eval: false` and flagged cells left out)."
    from nbdev.config import get_config
    from nbdev.test import nb_test_cells
    flags = str(get_config(path.parent).get("tst_flags", "")).split()
    return {c.get("id") for c in nb_test_cells(path, skip_flags=flags)}

def _run_one(path: Path, out: Path | None = None):
    from execnb.shell import CaptureShell
    from fastcore.nbio import read_nb, write_nb
    path = path.resolve()
    nb, run = read_nb(path), cells_run(path)
    os.environ["IN_TEST"] = "1"  # as under nbdev-test: a notebook's closing `nbdev_export()` leaves the package alone
    sh = CaptureShell()
    sh.set_path(path.parent.resolve())
    os.chdir(path.parent)  # notebooks read fixtures by relative path, as under nbdev-test
    for c in nb.cells:
        if c.cell_type == "code" and c.get("id") not in run: c.outputs = []  # not run: shows nothing, on every machine
    sh.run_all(nb, exc_stop=True, preproc=lambda c: c.get("id") not in run)
    outputs = {c.get("id"): (c.source, strip_widget_views(c.get("outputs", []))) for c in nb.cells if c.cell_type == "code"}
    if out is not None:
        for c in nb.cells:
            if c.cell_type == "code": c.outputs = outputs[c.get("id")][1]
        nb.metadata.pop("widgets", None)
        write_nb(nb, out)
        return
    # Others may edit other cells while this runs: write outputs into the file as it is now, cell by unchanged cell.
    cur = read_nb(path)
    for c in cur.cells:
        src, outs = outputs.get(c.get("id"), (None, None))
        if c.cell_type == "code" and src == c.source: c.outputs = outs
    cur.metadata.pop("widgets", None)
    write_nb(cur, path)

# What differs between two honest runs, in an output's text, put in a form that reads the same every time: a temp
# folder (`/tmp/tmp4blsofp9/no-such-folder` → `…/no-such-folder`), today's time, a 64-bit memory address.
_SCRUB = [
    (re.compile(r"(?<![\w.])(?:/private)?/tmp/[^\s/'\"<>)\]]+"), "…"),
    (re.compile(r"\b20\d\d-[01]\d-[0-3]\d([T ])[0-2]\d:[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"),
     lambda m: f"YYYY-MM-DD{m[1]}hh:mm:ss{m[2] or ''}"),
    (re.compile(r"\b0x7f[0-9a-f]{8,}\b"), "0x…"),
]

def scrub(text: str) -> str:
    "`text` with temp folders, timestamps and memory addresses put in a run-independent form."
    for rx, to in _SCRUB: text = rx.sub(to, text)
    return text

def scrub_output(o: dict) -> dict:
    "One output with its text scrubbed (images and widget JSON untouched)."
    def one(v): return [scrub(x) for x in v] if isinstance(v, list) else scrub(v) if isinstance(v, str) else v
    if "text" in o: o["text"] = one(o["text"])
    for mime in list(o.get("data", {})):
        if mime.startswith("text/"): o["data"][mime] = one(o["data"][mime])
    return o

_WARNING = re.compile(r"(?m)^\S*/[\w./-]+\.py:\d+: \w*Warning\b")  # how `warnings` prints: where it was raised

def strip_widget_views(outputs: list) -> list:
    "Outputs without widget views (a static page cannot draw them); an explorer's `text/html` snapshot stays."
    "A stderr stream naming this machine's paths (a library's warning: `/root/.pyenv/…/zipfile.py: UserWarning`) is"
    "dropped too: it tells where Python is installed, not what the cell does."
    out = []
    for o in outputs:
        if o.get("output_type") == "stream" and o.get("name") == "stderr":
            text = "".join(o["text"]) if isinstance(o.get("text"), list) else str(o.get("text", ""))
            if _WARNING.search(text) or any(rx.search(text) for rx in PATTERNS.values()): continue
        data = {k: v for k, v in o.get("data", {}).items() if k not in WIDGET_MIMES}
        if "data" in o and not set(data) - {"text/plain"} and WIDGET_MIMES & set(o["data"]): continue  # a bare widget
        if "data" in o: o["data"] = data
        out.append(scrub_output(o))
    return out

def _run(p: Path) -> bool:
    r = subprocess.run([sys.executable, __file__, "--child", str(p)], capture_output=True, text=True)
    if r.returncode:
        print(f"FAILED: {p}\n{(r.stderr or r.stdout)[-3000:]}", file=sys.stderr, flush=True)
        return False
    subprocess.run(["nbdev-clean", "--fname", str(p)], check=True)
    problems = nondeterministic_outputs(p)
    for m in problems: print(f"{p}: {m}", file=sys.stderr)
    print(f"{'ran' if not problems else 'NONDETERMINISTIC'} {p}", flush=True)
    return not problems

def main(paths, jobs: int = 1):
    "Run each notebook in its own process, `jobs` at a time (notebooks run alone, as under nbdev-test); 1 if any failed."
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        ok = list(pool.map(_run, map(Path, paths)))
    if not all(ok):
        print(f"{ok.count(False)} of {len(ok)} notebooks failed or hold run-dependent outputs (above)", file=sys.stderr)
    return 0 if all(ok) else 1

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--child"]
    if "--child" in sys.argv:
        out = Path(args[args.index("--out") + 1]) if "--out" in args else None
        _run_one(Path(args[0]), out)
        sys.exit(0)
    jobs = 1
    if "-j" in args:
        i = args.index("-j")
        jobs, args = int(args[i + 1]), args[:i] + args[i + 2:]
    sys.exit(main(args, jobs))
