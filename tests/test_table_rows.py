"""A long table found from outside: the installed CLI syncs a CSV of 1,500 rows and an XLSX sheet, a query for one
row's code finds it, and the hit says which rows of the table its passage holds — the row is inside that range."""

import json, os, subprocess, sys
from pathlib import Path

CLI = str(Path(sys.executable).parent / "minirag-mcp")  # the console script pip installed (what PATH runs)
ROWS = 1500


def cli(env, *args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600, env=env)


def part(i: int) -> str:
    return f"QZ{i * 7919 % 100000:05d}"


def span(rows: str) -> tuple[int, int, int]:
    "(first, last, total) of 'rows 13–24 of 400' or 'row 13 of 400'."
    words = rows.split()
    first, _, last = words[1].partition("–")
    return int(first), int(last or first), int(words[-1])


def test_a_hit_in_a_long_csv_names_the_rows_it_holds(tmp_path, model_dir):
    import openpyxl

    root = Path(os.path.realpath(tmp_path)) / "docs"
    root.mkdir()
    lines = ["part,bin,count"] + [f"{part(i)},{i % 40},{i * 13 % 997}" for i in range(ROWS)]
    (root / "stock.csv").write_text("\n".join(lines) + "\n")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Levels"
    ws.append(["part", "count"])
    for i in range(300):
        ws.append([f"LV{i:04d}", i])
    wb.save(root / "levels.xlsx")
    (root / "short.csv").write_text("part,count\nSH-1,4\nSH-2,5\n")
    env = {**os.environ, "BASE_DIR": str(root), "DB_PATH": str(tmp_path / "index"), "MODEL_NAME": str(model_dir),
           "CACHE_DIR": str(model_dir.parent)}  # fmt: skip
    r = cli(env, "sync", "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    for name, wanted, row in (("stock.csv", part(1234), 1235), ("levels.xlsx", "LV0250", 251)):
        r = cli(env, "query", wanted, "--json", "--top-k", "3")
        assert r.returncode == 0, r.stdout + r.stderr
        top = json.loads(r.stdout)["results"][0]
        assert top["source"].endswith(name) and wanted in top["text"], top
        first, last, total = span(top["rows"])
        assert first <= row <= last < total, (row, top["rows"])  # the row (1-based, header not counted) is in it
        assert total == (ROWS if name == "stock.csv" else 300), top["rows"]
        assert not top["text"].startswith("rows"), top["text"][:80]  # the range is context, not document text
    r = cli(env, "query", "SH-2", "--json")
    top = json.loads(r.stdout)["results"][0]
    assert top["source"].endswith("short.csv") and "rows" not in top, top  # a table in one chunk: no range
