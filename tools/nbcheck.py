"""Checks on committed notebooks: outputs must be deterministic and hold no widget state."""
import json, re
from pathlib import Path

WIDGET_MIMES = {"application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"}
# Things that change from run to run or machine to machine.
PATTERNS = {
    "absolute temp/home path": re.compile(r"(?<![\w.])/(?:tmp|root|home|private/var|var/folders|work)/"),
    "memory address": re.compile(r"\b0x7f[0-9a-f]{8,}"),  # 64-bit: 0x7f and 10 more digits (0x7f000001 is an IP)
    "timestamp": re.compile(r"\b20\d\d-[01]\d-[0-3]\d[T ][0-2]\d:[0-5]\d"),
}

def _output_texts(cell) -> list:
    out = []
    for o in cell.get("outputs", []):
        if "text" in o: out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
        for mime, v in o.get("data", {}).items():
            if mime.startswith("image/"): continue
            out.append("".join(v) if isinstance(v, list) else (v if isinstance(v, str) else json.dumps(v)))
        if "traceback" in o: out.append("\n".join(o["traceback"]))
    return out

def nondeterministic_outputs(path) -> list:
    "Problems found in a notebook's committed outputs, as messages (empty if clean)."
    raw = Path(path).read_text(encoding="utf-8")
    nb = json.loads(raw)
    problems = []
    views = any(WIDGET_MIMES & set(o.get("data", {})) for c in nb["cells"] for o in c.get("outputs", []))
    if views or "widgets" in nb.get("metadata", {}):  # (a cell's source may name the mime types)
        problems.append("holds widget state/views (run nbdev-clean, clear widget outputs)")
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code": continue
        if c.get("execution_count") is not None: problems.append(f"cell {i}: execution_count set (run nbdev-clean)")
        for t in _output_texts(c):
            for what, rx in PATTERNS.items():
                m = rx.search(t)
                if m: problems.append(f"cell {i}: output has a {what}: {t[max(0, m.start() - 30):m.end() + 30]!r}")
            if any(o.get("output_type") == "error" for o in c.get("outputs", [])): problems.append(f"cell {i}: error output")
    return problems
