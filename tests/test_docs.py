"""The docs build without Quarto: README == rendering of nbs/index.ipynb, every notebook goes through
nbdev's doc processors and renders to HTML, committed outputs are deterministic, the site config holds.

`nbdev-proc-nbs` (nbdev 3.3.26) calls `_ensure_quarto()`, which downloads Quarto when it is missing, so
these tests use the same processors through `tools/docs.py` (nbdev.processors.FilterDefaults) and render
with nbconvert's HTMLExporter."""
import importlib.util, subprocess, sys
from pathlib import Path
import pytest, yaml

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT/"nbs"

def _tool(name):
    spec = importlib.util.spec_from_file_location(f"tools_{name}", ROOT/"tools"/f"{name}.py")
    mod = importlib.util.module_from_spec(spec); sys.path.insert(0, str(ROOT/"tools")); spec.loader.exec_module(mod)
    return mod

docs, readme, nbcheck = _tool("docs"), _tool("readme"), _tool("nbcheck")
NOTEBOOKS = docs.notebooks()
ids = [str(p.relative_to(NBS)) for p in NOTEBOOKS]

def test_readme_is_the_rendering_of_index():
    r = subprocess.run([sys.executable, str(ROOT/"tools"/"readme.py"), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, "README.md differs from nbs/index.ipynb — run `python tools/readme.py`\n" + r.stdout[-3000:]

def test_readme_rendering_drops_hidden_cells_and_keeps_the_mcp_block(tmp_path):
    cur = (ROOT/"README.md").read_text(encoding="utf-8")
    fake = tmp_path/"README.md"
    fake.write_text("x\n<!-- mcp-clients:start -->\nHAND-WRITTEN CLIENTS\n<!-- mcp-clients:end -->\n", encoding="utf-8")
    text = readme.render(readme.INDEX, fake)
    assert "HAND-WRITTEN CLIENTS" in text and text.count("<!-- mcp-clients:start -->") == 1
    assert "#|" not in text and "test_eq" not in text and "fastcore.test" not in text
    assert "```python\n" in text and "| network-troubleshooting.md |" in text   # code shown, markdown tables of results kept
    assert "](nbs/tutorials/" in text and "](tutorials/" not in text               # notebook links point into nbs/
    assert "<table" not in text                                                    # HTML outputs are not copied
    assert "# minirag" in cur  # the real README is untouched by rendering

def test_readme_check_fails_on_drift(tmp_path, monkeypatch):
    stale = tmp_path/"README.md"
    stale.write_text(readme.render() + "drift\n", encoding="utf-8")
    monkeypatch.setattr(readme, "README", stale)
    assert readme.main(["--check"]) == 1
    monkeypatch.setattr(readme, "README", stale)
    assert readme.main([]) == 0 and readme.main(["--check"]) == 0

@pytest.mark.parametrize("nb", NOTEBOOKS, ids=ids)
def test_notebook_processes_and_renders(nb, tmp_path):
    page = docs.process_nb(nb, tmp_path/nb.relative_to(NBS))
    proc = docs.read_page(page)
    errs = [o for c in proc.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errs, f"{nb.name}: error outputs after processing"
    assert not any(c.cell_type == "code" and c.source.lstrip().startswith(("#| hide", "#|hide")) for c in proc.cells)
    html = docs.render_html(page)
    assert "<html" in html and len(html) > 1000

@pytest.mark.parametrize("nb", NOTEBOOKS, ids=ids)
def test_committed_outputs_are_deterministic(nb):
    assert nbcheck.nondeterministic_outputs(nb) == []

def test_checker_catches_bad_outputs(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook()
    c = nbformat.v4.new_code_cell("x")
    c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="db at /tmp/abc/index <obj at 0x7f12deadbeef> 2026-01-02T03:04\n")]
    nb.cells = [c]; nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    p = tmp_path/"bad.ipynb"; nbformat.write(nb, p)
    msgs = " ".join(nbcheck.nondeterministic_outputs(p))
    for what in ("temp/home path", "memory address", "timestamp", "widget state"): assert what in msgs

def _sidebar_entries(node):
    if isinstance(node, str): yield ("file", node)
    elif isinstance(node, list):
        for n in node: yield from _sidebar_entries(n)
    elif isinstance(node, dict):
        if "auto" in node: yield ("glob", node["auto"])
        if "href" in node: yield ("file", node["href"])
        if "contents" in node: yield from _sidebar_entries(node["contents"])

def test_site_config_and_sidebar_cover_every_notebook():
    q = yaml.safe_load((ROOT/"_quarto.yml").read_text())
    assert q["project"]["type"] == "website" and "sidebar.yml" in q["metadata-files"]
    assert (NBS/q["format"]["html"]["css"]).exists()
    for item in q["website"]["navbar"]["left"]: assert (NBS/item["href"]).exists(), item
    side = yaml.safe_load((NBS/"sidebar.yml").read_text())["website"]["sidebar"]["contents"]
    covered = set()
    for kind, v in _sidebar_entries(side):
        if kind == "file": assert (NBS/v).exists(), f"sidebar.yml names a missing page {v}"; covered.add(NBS/v)
        else: covered |= set(NBS.glob(v))
    missing = [str(p.relative_to(NBS)) for p in NOTEBOOKS if p not in covered]
    assert not missing, f"notebooks not reachable from nbs/sidebar.yml: {missing}"
