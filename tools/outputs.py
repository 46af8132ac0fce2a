#!/usr/bin/env python3
"""Committed notebook outputs against a fresh run: what a reader sees must be what the code gives today.

Usage: python tools/outputs.py                  # re-run every page and module notebook; re-render README
       python tools/outputs.py NB…              # re-run only these notebooks (README too if index.ipynb is one)
       python tools/outputs.py --check [NB…]    # run them afresh and compare: exit 1 naming the cells that moved
       -j N                                     # notebooks run N at a time (default 2, as `make nbtest`)
tests/test_docs.py makes the same comparison for every page and module notebook in CI.

Pages (the home page, tutorials, explanations) run afresh in a Jupyter kernel outside the repository, as a reader
runs them. Module notebooks (nbs/00_config … nbs/14_cli) run where they are, as nbdev-test runs them: in nbs/, so
they find ../tests/data, with the cells nbdev-test runs with no flags (see tools/run_nbs.py). A notebook that fails
is named and the others are still written; the exit status says whether all of them ran.

The comparison reads each code cell's results — the text of its outputs (a table's HTML rather than its
console rendering, which depends on the terminal width), streams to stdout, errors — with what may change
between two honest runs masked: timings, sizes in memory or on disk, memory addresses, temp paths. Images are
compared by presence, not bytes (a font or library update redraws them)."""
import html, json, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from run_nbs import scrub  # noqa: E402
NBS = ROOT / "nbs"
PAGES = [NBS / "index.ipynb", *sorted((NBS / "tutorials").glob("*.ipynb")), *sorted((NBS / "explanations").glob("*.ipynb"))]
MODULES = [p for p in sorted(NBS.glob("*.ipynb")) if p.name != "index.ipynb"]  # one module's page each

_MASKS = [
    (re.compile(r"\x1b\[[0-9;]*[A-Za-z]"), ""),                                   # terminal colours
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x…"),                                   # memory addresses
    (re.compile(r"(/private)?/tmp/[^\s'\"<>)]*"), "/tmp/…"),                      # temp folders
    (re.compile(r"\b\d+(?:[.,]\d+)*\s?(?:ms|µs|us|ns|s|sec|seconds?|min|minutes?)\b"), "<time>"),
    (re.compile(r"\b\d+(?:[.,]\d+)*\s?(?:[KMGT]i?B|bytes|B)\b"), "<size>"),
    (re.compile(r"\b\d+(?:[.,]\d+)*\s?(?:it|files?|chunks?|docs?|rows?|queries)/s\b"), "<rate>"),
    (re.compile(r"[ \t]+"), " "),
]

def _text(v) -> str:
    return "".join(v) if isinstance(v, list) else str(v)

def masked(text: str) -> str:
    text = scrub(text)  # what tools/run_nbs.py does before it saves an output, so a saved and a fresh one compare
    for rx, to in _MASKS:
        text = rx.sub(to, text)
    return text.strip()

def results(cell: dict) -> list[str]:
    "What one code cell shows a reader, masked; one entry per output."
    out, prev_stdout, raw = [], False, ""
    for o in cell.get("outputs", []):
        kind = o.get("output_type")
        prev_stdout = prev_stdout and kind == "stream" and o.get("name") == "stdout"
        if kind == "stream":
            if o.get("name") == "stdout":
                text = _text(o.get("text", ""))
                if prev_stdout:  # a kernel splits one cell's printing into chunks as time passes: read them as one
                    raw += text
                    out[-1] = masked(raw)
                else:
                    raw = text
                    out.append(masked(raw))
                prev_stdout = True
                continue
        elif kind == "error":
            out.append(f"error {o.get('ename')}: {masked(o.get('evalue', ''))}")
        else:
            data = o.get("data", {})
            if any(m.startswith("image/") for m in data):
                out.append("<image>")
            elif "application/vnd.jupyter.widget-view+json" in data and set(data) <= {"text/plain", "application/vnd.jupyter.widget-view+json"}:
                continue  # a live widget view: nothing a page shows
            else:
                for m in ("text/markdown", "text/html", "text/plain"):
                    if m in data:
                        out.append(masked(html.unescape(_text(data[m]))))
                        break
    return [r for r in out if r]

def differences(committed: dict, fresh: dict) -> list[str]:
    "One line per code cell whose masked results differ between the committed notebook and a fresh run of it."
    now = {c.get("id"): c for c in fresh["cells"] if c.get("cell_type") == "code"}
    out = []
    for c in committed["cells"]:
        if c.get("cell_type") != "code" or c.get("id") not in now:
            continue
        a, b = results(c), results(now[c["id"]])
        if a != b:
            x, y = next((x, y) for x, y in zip(a + [""] * len(b), b + [""] * len(a)) if x != y)
            i = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            src = _text(c.get("source", "")).strip().splitlines()
            where = f"cell {c['id']} ({src[0][:60] if src else ''})"
            out.append(f"{where}: committed …{x[max(0, i - 60):i + 80]!r}… fresh …{y[max(0, i - 60):i + 80]!r}…")
    return out

def fresh_run(page: Path, work: Path) -> dict:
    "`page` executed in a fresh Jupyter kernel in `work` (a folder outside the repository), as a reader runs it."
    import shutil, nbformat
    from nbclient import NotebookClient
    if page.parent == NBS:
        work.mkdir(parents=True, exist_ok=True)
        shutil.copy2(page, work)
    else:
        shutil.copytree(page.parent, work, dirs_exist_ok=True)
    if (ROOT / "bench" / "results" / "scale.json").exists():
        shutil.copy2(ROOT / "bench" / "results" / "scale.json", work)
    nb = nbformat.read(work / page.name, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
    return json.loads(nbformat.writes(nb))

def module_run(nb: Path, out: Path) -> dict:
    "Module notebook `nb` executed where it is, as nbdev-test runs it, the notebook itself untouched: the executed copy."
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "run_nbs.py"), "--child", str(nb), "--out", str(out)],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{nb.name} fails:\n{(r.stderr or r.stdout)[-3000:]}")
    return json.loads(out.read_text("utf-8"))

def is_module(nb: Path) -> bool:
    return nb.resolve().parent == NBS and nb.name != "index.ipynb"

def _moved(nb: Path) -> list[str]:
    import tempfile
    with tempfile.TemporaryDirectory(prefix="minirag-outputs-") as tmp:
        fresh = module_run(nb, Path(tmp) / nb.name) if is_module(nb) else fresh_run(nb, Path(tmp) / nb.parent.name)
        return differences(json.loads(nb.read_text("utf-8")), fresh)

def check(pages, jobs: int = 2) -> int:
    "Run each notebook afresh and report the cells whose results differ from the committed ones."
    from concurrent.futures import ThreadPoolExecutor
    bad = 0
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [(page, pool.submit(_moved, page)) for page in pages]
        for page, f in futures:
            try:
                moved = f.result()
            except Exception as e:
                moved = [str(e)]
            for m in moved:
                print(f"{page.relative_to(ROOT)}: {m}")
            bad += bool(moved)
            print(f"{'MOVED' if moved else 'same '} {page.relative_to(ROOT)}", flush=True)
    return 1 if bad else 0

def main(argv) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    jobs = int(argv[argv.index("-j") + 1]) if "-j" in argv else 2
    if "-j" in argv:
        del argv[argv.index("-j"):argv.index("-j") + 2]
    named = [Path(a).resolve() for a in argv if a != "--check"]
    if "--check" in argv:
        return check(named or PAGES + MODULES, jobs)
    todo = named or PAGES + MODULES
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "run_nbs.py"), "-j", str(jobs), *map(str, todo)])
    if NBS / "index.ipynb" in todo:
        r2 = subprocess.run([sys.executable, str(ROOT / "tools" / "readme.py")])
        return r.returncode or r2.returncode
    return r.returncode

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
