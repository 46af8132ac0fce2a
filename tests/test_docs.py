"""The docs build without Quarto: README == rendering of nbs/index.ipynb, every notebook goes through
nbdev's doc processors and renders to HTML with pandoc, committed outputs are deterministic, the site config
holds, the offline site reads well in a real headless browser, and the tutorials run outside the repository.

`nbdev-proc-nbs` (nbdev 3.3.26) calls `_ensure_quarto()`, which downloads Quarto when it is missing, so
these tests use the same processors through `tools/docs.py` (nbdev.processors.FilterDefaults) and render
with Debian's pandoc. The browser test drives Debian's chromium + chromium-driver with selenium."""

import importlib.util, json, os, shutil, subprocess, sys
from pathlib import Path
import re
import pytest, yaml

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"


def _tool(name):
    spec = importlib.util.spec_from_file_location(f"tools_{name}", ROOT / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "tools"))
    spec.loader.exec_module(mod)
    return mod


docs, readme, nbcheck = _tool("docs"), _tool("readme"), _tool("nbcheck")
NOTEBOOKS = docs.notebooks()
ids = [str(p.relative_to(NBS)) for p in NOTEBOOKS]


def test_readme_is_the_rendering_of_index():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "readme.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0, (
        "README.md differs from nbs/index.ipynb — run `python tools/readme.py`\n" + r.stdout[-3000:]
    )


def test_readme_format_table_is_the_converters_table():
    "Every row of the converter's format table stands in the README as it is, and the README lists no other."
    from minirag.formats.convert import FORMATS

    want = [f"| {' '.join(f'`{e}`' for e in exts.split())} | {how} | {needs or '—'} |" for exts, how, needs in FORMATS]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [row for row in want if row not in text]
    assert not missing, (
        "README's format table differs from minirag.formats.convert.FORMATS; edit nbs/index.ipynb:\n"
        + "\n".join(missing)
    )
    start = text.index("| extensions | read as | needs |")
    rows = [l for l in text[start:].splitlines()[2:] if l.startswith("| `")]
    rows = rows[: next((i for i, l in enumerate(rows) if l not in want), len(rows))]
    assert len(rows) == len(want), f"README's format table has {len(rows)} of {len(want)} rows in a run"


def test_readme_rendering_drops_hidden_cells_and_keeps_the_mcp_block(tmp_path):
    cur = (ROOT / "README.md").read_text(encoding="utf-8")
    fake = tmp_path / "README.md"
    fake.write_text("x\n<!-- mcp-clients:start -->\nHAND-WRITTEN CLIENTS\n<!-- mcp-clients:end -->\n", encoding="utf-8")
    text = readme.render(readme.INDEX, fake)
    assert "HAND-WRITTEN CLIENTS" in text and text.count("<!-- mcp-clients:start -->") == 1
    assert "#|" not in text and "test_eq" not in text and "fastcore.test" not in text
    assert (
        "```python\n" in text and "| network-troubleshooting.md |" in text
    )  # code shown, markdown tables of results kept
    assert "](nbs/tutorials/" in text and "](tutorials/" not in text  # notebook links point into nbs/
    assert "<table" not in text  # HTML outputs are not copied
    assert "# minirag" in cur  # the real README is untouched by rendering


def test_readme_check_fails_on_drift(tmp_path, monkeypatch):
    stale = tmp_path / "README.md"
    stale.write_text(readme.render() + "drift\n", encoding="utf-8")
    monkeypatch.setattr(readme, "README", stale)
    assert readme.main(["--check"]) == 1
    monkeypatch.setattr(readme, "README", stale)
    assert readme.main([]) == 0 and readme.main(["--check"]) == 0


def need(exe: str, packages: str):
    "Skip when a system tool is missing, naming the apt packages (with MINIRAG_REQUIRE_SYSTEM_TOOLS=1: fail)."
    if shutil.which(exe):
        return shutil.which(exe)
    why = f"{exe} is not on PATH (install: apt-get install {packages})"
    if os.environ.get("MINIRAG_REQUIRE_SYSTEM_TOOLS", "").strip() not in ("", "0", "false", "no"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=ids)
def test_notebook_processes_and_renders(nb, tmp_path):
    need("pandoc", "pandoc")
    page = docs.process_nb(nb, tmp_path / "proc" / nb.relative_to(NBS))
    proc = docs.read_page(page)
    errs = [
        o for c in proc.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errs, f"{nb.name}: error outputs after processing"
    assert not any(c.cell_type == "code" and c.source.lstrip().startswith(("#| hide", "#|hide")) for c in proc.cells)
    rel = str(nb.relative_to(NBS))
    site = docs.Site()
    out = docs.render_page(page, rel, tmp_path / "site", site)
    html = out.read_text(encoding="utf-8")
    assert f"<title>{site.html_title(docs.source_title(nb))}</title>" in html and '<h1 class="title">' in html
    assert 'id="sidebar"' in html and 'aria-current="page"' in html, "the page is in the sidebar, marked current"
    text = _visible_text(html)
    for raw in ("output-file:", "{target=", "show_doc(", ":::"):
        assert raw not in text, f"{nb.name}: {raw!r} shows on the rendered page"
    for code in re.findall(r"(?s)<pre\b[^>]*>(.*?)</pre>", html):
        assert not re.search(r"(?m)^\s*#\|", _visible_text(code)), f"{nb.name}: a cell directive shows in code"
    assert not re.search(r'(src|href)="(https?:)?//[^"]*\.(css|js)"', html), "pages must not need a CDN"
    here = os.path.dirname(out.relative_to(tmp_path / "site"))
    known = set(site.outputs.values()) | {
        "site.css",
        "styles.css",
        "search.js",
        "search-index.js",
    }  # render_site writes them
    dangling = []
    for href in re.findall(r'(?:href|src)="([^"#]+)[^"]*"', html):
        if href.startswith(site.doc_url + "/"):
            assert href[len(site.doc_url) + 1 :] not in known, f"{href} should link the local page"
        elif not re.match(r"[a-z]+:", href):
            target = os.path.normpath(os.path.join(here, href))
            if not (target in known or (tmp_path / "site" / target).exists()):
                dangling.append(href)
    assert not dangling, f"{nb.name}: links to nothing in the site: {dangling}"


def _visible_text(html: str) -> str:
    "The text a reader sees (tags, styles and scripts removed)."
    import html as h

    html = re.sub(r"(?s)<(style|script)\b.*?</\1>", "", html)
    return h.unescape(re.sub(r"<[^>]+>", "", html))


def test_page_markdown_honours_cell_options():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_raw_cell("---\ntitle: T\ndescription: D\noutput-file: t.html\n---\n"),
        nbformat.v4.new_markdown_cell('See [x](tutorials/x.ipynb){target="_blank"}.'),
    ]
    for src, out in [
        ("#| echo: false\nHIDDEN_CODE", "SHOWN_OUTPUT"),
        ("#| output: false\nSHOWN_CODE", "HIDDEN_OUTPUT"),
        ("#| include: false\nHIDDEN_CELL", "HIDDEN_TOO"),
        ("#| echo: false\n#| output: asis\nshow_doc(f)", "**asis** markdown"),
    ]:
        c = nbformat.v4.new_code_cell(src)
        c.outputs = [
            nbformat.v4.new_output("execute_result", data={"text/markdown" if "asis" in out else "text/plain": out})
        ]
        nb.cells.append(c)
    meta, md = docs.page_markdown(nb, lambda data, ext: "fig.png")
    assert meta == {"title": "T", "description": "D", "output-file": "t.html"} and "title:" not in md
    assert "SHOWN_OUTPUT" in md and "SHOWN_CODE" in md and "**asis** markdown" in md
    for gone in ("HIDDEN_CODE", "HIDDEN_OUTPUT", "HIDDEN_CELL", "HIDDEN_TOO", "#|", "show_doc"):
        assert gone not in md, gone


def test_links_to_notebooks_resolve_to_rendered_pages():
    site = docs.Site()
    links = site.link_map("tutorials/chunking.ipynb")
    assert links["quick_start.ipynb"] == "quick_start.html" and links["../index.ipynb"] == "../index.html"
    assert links["../03_chunk.ipynb"] == "../chunk.html"  # nbdev's output-file drops the number
    assert site.link_map("index.ipynb")["tutorials/chunking.ipynb"] == "tutorials/chunking.html"
    assert links[f"{site.doc_url}/search.html"] == "../search.html"  # nbdev's links to `names` stay in the offline site


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=ids)
def test_committed_outputs_are_deterministic(nb):
    assert nbcheck.nondeterministic_outputs(nb) == []


def test_notebooks_carry_a_kernelspec():
    "Opened in Jupyter or run by nbclient, each notebook names its kernel (nbdev-clean keeps `kernelspec`)."
    lacking = [str(p.relative_to(NBS)) for p in NOTEBOOKS
               if json.loads(p.read_text(encoding="utf-8"))["metadata"].get("kernelspec", {}).get("name") != "python3"]
    assert not lacking, f"notebooks without the python3 kernelspec: {lacking}"


def test_checker_catches_bad_outputs(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    c = nbformat.v4.new_code_cell("x")
    c.outputs = [
        nbformat.v4.new_output(
            "stream", name="stdout", text="db at /tmp/abc/index <obj at 0x7f12deadbeef> 2026-01-02T03:04\n"
        )
    ]
    nb.cells = [c]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    p = tmp_path / "bad.ipynb"
    nbformat.write(nb, p)
    msgs = " ".join(nbcheck.nondeterministic_outputs(p))
    for what in ("temp/home path", "memory address", "timestamp", "widget state"):
        assert what in msgs


def test_explorer_snapshots_survive_but_widget_views_do_not(tmp_path):
    "tools/run_nbs.py drops widget views (never committed) and keeps an explorer's static HTML snapshot."
    import nbformat

    run_nbs = _tool("run_nbs")
    view = {"version_major": 2, "version_minor": 0, "model_id": "abc"}
    live = nbformat.v4.new_output(
        "execute_result",
        data={
            "application/vnd.jupyter.widget-view+json": view,
            "text/html": '<div class="mr-snapshot">x</div>',
            "text/plain": "SearchExplorer('q')",
        },
    )
    bare = nbformat.v4.new_output(
        "display_data", data={"application/vnd.jupyter.widget-view+json": view, "text/plain": "VBox()"}
    )
    kept = run_nbs.strip_widget_views([live, bare])
    assert len(kept) == 1 and set(kept[0]["data"]) == {"text/html", "text/plain"}
    nb = nbformat.v4.new_notebook()
    c = nbformat.v4.new_code_cell('assert "application/vnd.jupyter.widget-view+json" in bundle')
    c.outputs = kept
    nb.cells = [c]
    p = tmp_path / "snap.ipynb"
    nbformat.write(nb, p)
    assert nbcheck.nondeterministic_outputs(p) == []  # a cell may name the mime type; only outputs and metadata count


def _sidebar_entries(node):
    if isinstance(node, str):
        yield ("file", node)
    elif isinstance(node, list):
        for n in node:
            yield from _sidebar_entries(n)
    elif isinstance(node, dict):
        if "auto" in node:
            yield ("glob", node["auto"])
        if "href" in node:
            yield ("file", node["href"])
        if "contents" in node:
            yield from _sidebar_entries(node["contents"])


def test_site_config_and_sidebar_cover_every_notebook():
    q = yaml.safe_load((ROOT / "_quarto.yml").read_text())
    assert q["project"]["type"] == "website" and "sidebar.yml" in q["metadata-files"]
    assert (NBS / q["format"]["html"]["css"]).exists()
    for item in q["website"]["navbar"]["left"]:
        assert (NBS / item["href"]).exists(), item
    side = yaml.safe_load((NBS / "sidebar.yml").read_text())["website"]["sidebar"]["contents"]
    covered = set()
    for kind, v in _sidebar_entries(side):
        if kind == "file":
            assert (NBS / v).exists(), f"sidebar.yml names a missing page {v}"
            covered.add(NBS / v)
        else:
            covered |= set(NBS.glob(v))
    missing = [str(p.relative_to(NBS)) for p in NOTEBOOKS if p not in covered]
    assert not missing, f"notebooks not reachable from nbs/sidebar.yml: {missing}"
    assert ".invalid" not in (ROOT / "_quarto.yml").read_text(), "no placeholder host in the site's links"


# ---------------------------------------------------------------------------------------------------------------
# The offline site as a reader sees it: a real headless chromium (Debian's chromium + chromium-driver).

CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1300",
]


@pytest.fixture
def browser(tmp_path):
    chromium, driver = need("chromium", "chromium chromium-driver"), need("chromedriver", "chromium chromium-driver")
    try:
        from selenium import webdriver
    except ImportError:
        pytest.skip("selenium is missing (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for f in CHROME_FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]:
        opts.add_argument(f)
    d = webdriver.Chrome(service=Service(driver), options=opts)  # explicit driver: selenium never downloads one
    yield d
    d.quit()


READER_PAGE = "tutorials/pandas_analysis.ipynb"  # has a plot and an explorer snapshot


def test_site_reads_well_in_a_browser(tmp_path, browser):
    "Render the home page and a tutorial, open them in chromium, follow the sidebar, look at what a reader sees."
    from selenium.webdriver.common.by import By

    need("pandoc", "pandoc")
    pages = docs.stage(tmp_path / "proc", only=[NBS / "index.ipynb", NBS / READER_PAGE])
    files = docs.render_site(tmp_path / "proc", tmp_path / "site", pages)
    home, tut = files
    browser.get(home.as_uri())
    assert browser.title == "minirag"
    side = browser.find_elements(By.CSS_SELECTOR, "#sidebar a")
    titles = [a.text for a in side]
    for t in (
        "Quick start",
        "Exploring chunking",
        "Analysing results with pandas",
        "Why minirag works this way",
        "Explorers",
    ):
        assert t in titles, f"sidebar lacks {t!r}: {titles}"
    assert browser.find_element(By.CSS_SELECTOR, "#navbar .site-title").text == "minirag"
    _no_raw_markup(browser)
    next(a for a in side if a.text == "Analysing results with pandas").click()  # navigation works offline
    assert browser.current_url == tut.as_uri()
    assert browser.title == "Analysing results with pandas – minirag"
    assert browser.find_element(By.CSS_SELECTOR, "h1.title").text == "Analysing results with pandas"
    assert "aria-current" in browser.find_element(By.CSS_SELECTOR, "#sidebar a.active").get_attribute("outerHTML")
    snap = browser.find_element(By.CSS_SELECTOR, ".mr-snapshot")
    assert snap.is_displayed() and "search explorer" in snap.text and "vector rank" in snap.text
    imgs = browser.find_elements(By.CSS_SELECTOR, ".cell-output-display img")
    assert imgs and all(
        browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 100", i) for i in imgs
    ), "plots load"
    _no_raw_markup(browser)
    remote = browser.execute_script(
        "return [...document.querySelectorAll('link[href],script[src],img[src]')]"
        ".map(e => e.href || e.src).filter(u => !u.startsWith('file:') && !u.startsWith('data:'))"
    )
    assert remote == [], f"resources that need a network: {remote}"
    css = browser.execute_script("return getComputedStyle(document.querySelector('#navbar')).backgroundColor")
    assert css == "rgb(39, 128, 227)", "local CSS applied"
    browser.execute_script("arguments[0].scrollIntoView()", snap)
    browser.save_screenshot(str(tmp_path / "tutorial.png"))  # look at it: pytest --basetemp=DIR keeps it
    assert (tmp_path / "tutorial.png").stat().st_size > 10_000


def test_site_reads_on_a_phone(tmp_path, browser):
    "At 400 px the page text takes the screen's width, the page list folds behind a button above the title (not the"
    "whole sidebar above every page), and nothing widens the page."
    from selenium.webdriver.common.by import By

    need("pandoc", "pandoc")
    pages = docs.stage(tmp_path / "proc", only=[NBS / "index.ipynb", NBS / READER_PAGE])
    browser.set_window_size(400, 900)
    for page in docs.render_site(tmp_path / "proc", tmp_path / "site", pages):
        browser.get(page.as_uri())
        width = browser.execute_script("return document.documentElement.clientWidth")
        content = browser.execute_script("return document.querySelector('#content').getBoundingClientRect().width")
        assert content >= 0.9 * width, f"{page.name}: the content is {content:.0f} px of {width} px"
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        assert wide <= width + 1, f"{page.name}: the page scrolls sideways ({wide} px wide on a {width} px screen)"
        title = browser.execute_script("return document.querySelector('h1.title').getBoundingClientRect().top")
        assert title < 200, f"{page.name}: the page's title starts {title:.0f} px down, below the site's page list"
    browser.save_screenshot(str(tmp_path / "phone.png"))  # look at it: pytest --basetemp=DIR keeps it
    links = browser.find_elements(By.CSS_SELECTOR, "#sidebar a")
    assert links and not any(a.is_displayed() for a in links), "on a phone the page list is folded"
    browser.find_element(By.CSS_SELECTOR, "#sidebar > label").click()
    assert all(a.is_displayed() for a in links[:3]), "the Pages button unfolds the page list"
    browser.save_screenshot(str(tmp_path / "phone-pages.png"))


def test_site_links_and_anchors_all_resolve(tmp_path):
    "The whole offline site: every link to a page finds it, every anchor an element, no link to a placeholder host."
    from html.parser import HTMLParser

    need("pandoc", "pandoc")
    files = docs.render_site(tmp_path / "proc", tmp_path / "site", docs.stage(tmp_path / "proc"))

    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.ids, self.hrefs = set(), []

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if a.get("id"):
                self.ids.add(a["id"])
            if tag == "a" and a.get("href"):
                self.hrefs.append(a["href"])

    pages = {}
    for f in files:
        p = Links()
        p.feed(f.read_text(encoding="utf-8"))
        pages[f.resolve()] = p
    broken = []
    for f, p in pages.items():
        for h in p.hrefs:
            if ".invalid" in h:
                broken.append(f"{f.name}: {h} (a placeholder host)")
            if re.match(r"^[a-z]+:", h) or h.startswith("//"):
                continue
            path, _, frag = h.partition("#")
            target = (f.parent / path).resolve() if path else f
            if not target.exists():
                broken.append(f"{f.name}: {h} (no such page)")
            elif frag and target in pages and frag not in pages[target].ids:
                broken.append(f"{f.name}: {h} (no such anchor)")
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:40])
    if docs.repository_url() is None:
        assert not any("blob/main" in h for p in pages.values() for h in p.hrefs), (
            "no source links without a repository"
        )


def test_site_search_finds_pages_offline(tmp_path, browser):
    "The search box, from file:// with no network: typing finds the sections that hold every word, a click opens one."
    from selenium.webdriver.common.by import By

    need("pandoc", "pandoc")
    pages = docs.stage(
        tmp_path / "proc", only=[NBS / "index.ipynb", NBS / READER_PAGE, NBS / "tutorials" / "chunking.ipynb"]
    )
    home = docs.render_site(tmp_path / "proc", tmp_path / "site", pages)[0]
    browser.get(home.as_uri())
    box = browser.find_element(By.ID, "search")
    box.send_keys("DataFrame columns")
    results = browser.find_elements(By.CSS_SELECTOR, "#search-results li a")
    assert results and browser.find_element(By.ID, "search-results").is_displayed()
    titles = [a.text for a in results]
    assert any(t.startswith("Analysing results with pandas") for t in titles), titles
    box.clear()
    box.send_keys("zzqx-no-such-word")
    assert browser.find_element(By.ID, "search-results").text == "no match"
    box.clear()
    box.send_keys("token budget")
    browser.save_screenshot(str(tmp_path / "search.png"))  # look at it: pytest --basetemp=DIR keeps it
    first = browser.find_elements(By.CSS_SELECTOR, "#search-results li a")[0]
    href = first.get_attribute("href")
    first.click()
    assert browser.current_url == href and "budget" in browser.find_element(By.ID, "content").text.lower()


def test_site_search_ranks_titles_and_headings_before_internals(tmp_path, browser):
    "A page titled with the words first, then headings that say them as words, then names that only contain them;"
    "a guide before an API page on a tie (the order of the index does not decide)."
    docs.write_search([], tmp_path)
    (tmp_path / "rank.html").write_text('<script src="search.js"></script>', encoding="utf-8")
    browser.get((tmp_path / "rank.html").as_uri())
    index = [
        dict(u="keywords.html#query_words", t="Keyword terms › query_words", x="query terms", g=0),
        dict(u="tables.html#q", t="Tables › Tables.query_meta", x="", g=0),
        dict(u="api.html#index.query", t="The library API › Index.query", x="", g=0),
        dict(u="tutorials/p.html#one", t="Analysing results › One query, three weights", x="", g=1),
        dict(u="search.html", t="Query syntax", x="how a query reads", g=0),
        dict(u="search.html#x", t="Query syntax › Operators", x="query operators", g=0),
        dict(u="chunk.html", t="Chunking", x="no match here", g=0),
    ]
    ranked = browser.execute_script("return MINIRAG_RANK(arguments[0], arguments[1]).map(d => d.u)", index, "Query")
    test = ["search.html", "search.html#x", "tutorials/p.html#one", "api.html#index.query"]
    assert ranked[: len(test)] == test, ranked
    assert set(ranked[len(test) :]) == {"keywords.html#query_words", "tables.html#q"}, ranked


def _no_raw_markup(browser):
    text = browser.find_element("tag name", "body").text
    for raw in ("output-file:", "description:", "{target=", "show_doc(", ":::", "```"):
        assert raw not in text, f"{raw!r} shows on {browser.current_url}"
    assert not text.lstrip().startswith("---")
    code = browser.execute_script("return [...document.querySelectorAll('pre')].map(p => p.innerText).join('\\n')")
    assert not re.search(r"(?m)^\s*#\|", code), f"a cell directive shows in code on {browser.current_url}"


@pytest.mark.parametrize(
    "nb", [NBS / "tutorials" / "quick_start.ipynb", NBS / "index.ipynb"], ids=["quick_start", "index"]
)
def test_code_a_reader_copies_has_its_imports(nb):
    "No name a shown cell uses comes from an import in a cell the page hides: copied cell by cell, the code runs."
    import ast, importlib, nbformat

    def hidden(c):
        o = docs.directives(c.source)[0]
        return o.get("include") is False or o.get("echo") is False or "#| hide" in c.source

    cells = [c for c in nbformat.read(nb, as_version=4).cells if c.cell_type == "code"]

    def tree(c):
        return ast.parse("\n".join(l for l in c.source.splitlines() if not l.startswith(("#|", "%", "!"))))

    def imports(cs):
        out = set()
        for c in cs:
            for n in ast.walk(tree(c)):
                if isinstance(n, ast.Import):
                    out |= {a.asname or a.name.split(".")[0] for a in n.names}
                elif isinstance(n, ast.ImportFrom):
                    for a in n.names:
                        out |= set(dir(importlib.import_module(n.module))) if a.name == "*" else {a.asname or a.name}
        return out

    shown = [c for c in cells if not hidden(c)]
    only_hidden = imports(filter(hidden, cells)) - imports(shown) - set(dir(__builtins__))
    used = {n.id for c in shown for n in ast.walk(tree(c)) if isinstance(n, ast.Name)}
    assert not used & only_hidden, f"shown code uses names only a hidden cell imports: {sorted(used & only_hidden)}"


def test_pages_name_nothing_a_reader_cannot_follow():
    "No requirement ids, issue numbers or files that are not in the repository, in any page's prose or output."
    bad = re.compile(r"\bR-[A-Z]{1,3}\d+\b|\b[Ii]ssues? #?\d+\b|\b[A-Z]{4,}\d*\.md\b")  # DUCKDB.md, SPEC.md …
    import nbformat

    found = []
    for p in NOTEBOOKS:
        for c in nbformat.read(p, as_version=4).cells:
            texts = [c.source] + [
                str(o.get("text", ""))
                + str(o.get("data", {}).get("text/markdown", ""))
                + str(o.get("data", {}).get("text/plain", ""))
                for o in c.get("outputs", [])
            ]
            for t in texts:
                for m in bad.finditer(t):
                    if not (ROOT / m.group(0)).exists() and m.group(0).upper() not in ("README.MD", "LICENSE.MD"):
                        found.append(
                            f"{p.relative_to(NBS)}: {m.group(0)!r} in …{t[max(0, m.start() - 40) : m.end() + 20]!r}"
                        )
    assert not found, "\n".join(found)


# ---------------------------------------------------------------------------------------------------------------
# Every tutorial runs top to bottom from the installed package, in a folder outside the repository.

TUTORIALS = sorted((NBS / "tutorials").glob("*.ipynb")) + sorted((NBS / "explanations").glob("*.ipynb"))
outputs = _tool("outputs")

RUN_NB = r"""
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
# a fresh Jupyter kernel, as `jupyter nbconvert --execute` or JupyterLab would start it: no project runner, no
# image formatter of ours, whatever matplotlib backend the kernel picks by itself
NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "."}}).execute()
nbformat.write(nb, sys.argv[2])
"""


def _draws(source: str) -> bool:
    "A cell that makes a matplotlib figure."
    return "plt.subplots(" in source or "plt.figure(" in source


PAGES = [NBS / "index.ipynb"] + TUTORIALS  # the home page (the README's source) and every tutorial and explanation


@pytest.mark.parametrize("nb", PAGES, ids=[str(p.relative_to(NBS)) for p in PAGES])
def test_tutorial_runs_outside_the_repo(nb, tmp_path):
    "Each page in a fresh kernel, from the installed package, in a folder outside the repository: it runs top to"
    "bottom, every cell that draws a figure shows it as an image, and its results are the committed ones (ranks,"
    "sources, counts; timings and addresses aside). `python tools/outputs.py` brings the committed ones up to date."
    pytest.importorskip("ipykernel", reason="pip install 'minirag[notebook]' (the tutorials' kernel)")
    import nbformat

    work = tmp_path / "elsewhere" / nb.parent.name
    work.mkdir(parents=True)
    shutil.copy2(nb, work)  # the notebook alone, as a reader downloads it: what it reads comes with the package
    if (ROOT / "bench" / "results" / "scale.json").exists():
        shutil.copy2(ROOT / "bench" / "results" / "scale.json", work)  # the scale page draws from it, beside the page
    env = {**os.environ, "PYTHONPATH": "", "HOME": str(tmp_path / "home")}
    env.pop("MPLBACKEND", None)
    done = tmp_path / "executed.ipynb"
    r = subprocess.run(
        [sys.executable, "-c", RUN_NB, nb.name, str(done)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, f"{nb.name} fails outside the repository:\n{(r.stderr or r.stdout)[-3000:]}"
    ran = nbformat.read(done, as_version=4)
    plots = [c for c in ran.cells if c.cell_type == "code" and _draws(c.source)]
    for c in plots:
        mimes = [m for o in c.get("outputs", []) for m in o.get("data", {})]
        texts = " ".join(str(o.get("data", {}).get("text/plain", "")) for o in c.get("outputs", []))
        if "No scale benchmark results yet" in str(c.get("outputs")):
            continue  # the scale page without benchmark results says so instead of drawing
        assert "image/png" in mimes, f"{nb.name}: a figure cell shows no image ({texts[:200]!r}):\n{c.source[:300]}"
    moved = outputs.differences(nbformat.read(nb, as_version=4), ran)
    assert not moved, f"{nb.name}: committed outputs differ from a fresh run (python tools/outputs.py):\n" + "\n".join(
        moved
    )


# ---------------------------------------------------------------------------------------------------------------
# Links a reader follows from the package itself: each module's docstring ends with a "Docs:" link only when
# pyproject names the documentation's home, and then to the module's page there; no placeholder host anywhere.


def test_module_docs_links_come_from_the_configured_url():
    import ast, tomllib
    from nbdev.config import nbpath2html

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    doc_url = urls.get("Documentation", "").rstrip("/")
    modules = {}
    for nb in NBS.glob("*.ipynb"):
        m = re.search(r"#\|\s*default_exp\s+([\w.]+)", nb.read_text(encoding="utf-8"))
        if m:
            modules[ROOT / "minirag" / (m.group(1).replace(".", "/") + ".py")] = nb
    assert len(modules) > 20, "every module notebook names its module"
    wrong = []
    for py, nb in sorted(modules.items()):
        doc = ast.get_docstring(ast.parse(py.read_text(encoding="utf-8"))) or ""
        links = re.findall(r"(?m)^Docs:\s*(\S+)", doc)
        want = [f"{doc_url}/{nbpath2html(nb.relative_to(NBS)).as_posix()}.md"] if doc_url else []
        if links != want:
            wrong.append(f"{py.name}: {links} (want {want})")
    assert not wrong, "module docstrings' Docs: links (nbdev-export writes them from [project.urls]):\n" + "\n".join(
        wrong
    )


def test_no_placeholder_host_in_pages_modules_or_site_config():
    "A host under .invalid is a placeholder (the pages' examples use .example): none in a page, module or site file."
    placeholder = re.compile(r"(?i)\b[\w.-]+\.invalid(?=[/\"'\s:)]|$)")
    files = [
        *NOTEBOOKS,
        *sorted((ROOT / "minirag").rglob("*.py")),
        ROOT / "README.md",
        ROOT / "_quarto.yml",
        NBS / "sidebar.yml",
    ]
    found = [
        f"{f.relative_to(ROOT)}: {m.group(0)}"
        for f in files
        for m in placeholder.finditer(f.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found[:40])
    assert placeholder.search('Docs: https://example.invalid/minirag/cli.html.md"""')  # what it used to say


# ---------------------------------------------------------------------------------------------------------------
# Module pages show their small outputs, and they are what the code gives today: each module notebook, run where
# it is as nbdev-test runs it (tools/run_nbs.py), against what is committed. `python tools/outputs.py` rewrites them.

MODULE_NBS = outputs.MODULES


@pytest.fixture(scope="module")
def module_runs(request, tmp_path_factory):
    "Fresh runs of the module notebooks this session tests, two at a time (each runs alone, as under nbdev-test)."
    from concurrent.futures import ThreadPoolExecutor

    wanted = [
        i.callspec.params["nb"]
        for i in request.session.items
        if getattr(i, "originalname", "") == "test_module_outputs_are_current" and hasattr(i, "callspec")
    ]
    out = tmp_path_factory.mktemp("module-runs")
    pool = ThreadPoolExecutor(2)
    yield {nb: pool.submit(outputs.module_run, nb, out / nb.name) for nb in wanted}
    pool.shutdown(wait=False, cancel_futures=True)


@pytest.mark.slow
@pytest.mark.parametrize("nb", MODULE_NBS, ids=[p.name for p in MODULE_NBS])
def test_module_outputs_are_current(nb, module_runs):
    "A module page shows what its cells give: none missing, none stale (timings, sizes and temp paths aside)."
    import json

    fresh = module_runs[nb].result(timeout=1200)
    moved = outputs.differences(json.loads(nb.read_text(encoding="utf-8")), fresh)
    fix = f"python tools/outputs.py {nb.relative_to(ROOT)}"
    assert not moved, f"{nb.name}: committed outputs differ from a fresh run ({fix}):\n" + "\n".join(moved)


def test_module_runs_leave_out_what_nbdev_test_leaves_out(tmp_path):
    "A cell marked `eval: false` or with a test flag is not run and shows nothing, so saved outputs do not depend on"
    "the machine's system tools; a library warning naming this machine's paths is not saved; the rest is."
    import json, nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# T\n> t"),
        nbformat.v4.new_code_cell("1 + 1"),
        nbformat.v4.new_code_cell("#| eval: false\nraise SystemExit('not run')"),
        nbformat.v4.new_code_cell("#| slow\nprint('flagged')"),
        nbformat.v4.new_code_cell(
            "import sys\nprint('/usr/lib/python3/x.py:1: UserWarning: w', file=sys.stderr)\n'kept'"
        ),
    ]
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="stale")]
    src = NBS / "_reader_probe.ipynb"  # in nbs/, where module notebooks run (nbdev's config is found from there)
    nbformat.write(nb, src)
    try:
        ran = outputs.module_run(src, tmp_path / "ran.ipynb")
    finally:
        src.unlink()
    shown = [outputs.results(c) for c in ran["cells"] if c["cell_type"] == "code"]
    assert shown == [["2"], [], [], ["'kept'"]], shown
    assert not any(o.get("name") == "stderr" for c in ran["cells"] for o in c.get("outputs", []))
    assert json.loads(json.dumps(ran))["cells"][2]["outputs"] == []
