#!/usr/bin/env python3
"""Build the documentation without nbdev's Quarto wrappers.

    python tools/docs.py            # process nbs/ into _proc/ (+ _quarto.yml); run `quarto render` if Quarto exists
    python tools/docs.py --html DIR # also render an offline site into DIR with pandoc (no Quarto, no network)

`nbdev-proc-nbs` (nbdev 3.3.26) calls `_ensure_quarto()`, which downloads Quarto when it is missing, and
writes `nbs/nbdev.yml`/`nbs/_quarto.yml`; this script runs the same notebook processors
(`nbdev.processors.FilterDefaults`: show_doc, hide, export cleaning…) and stages the repository-root
`_quarto.yml` instead.

The offline site does what Quarto does, on a smaller scale: each processed notebook becomes pandoc
Markdown (front matter → metadata, `#| echo/output/include` honoured, `output: asis` Markdown spliced in,
PNG outputs written next to the page), and pandoc renders it with a local template: page title and
description from the front matter, a sidebar from `nbs/sidebar.yml`, the navbar from `_quarto.yml`,
links to notebooks (and nbdev's doc links to its own site) resolved to the rendered pages, Quarto link attributes (`{target="_blank"}`) applied,
local CSS only (no CDN, no MathJax, no require.js). Needs Debian's `pandoc`.
"""
import base64, fnmatch, json, os, re, shutil, subprocess, sys, tempfile, warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT/"nbs"
SITE_FILES = ("sidebar.yml", "styles.css")

def notebooks(nbs: Path = NBS) -> list:
    "Every notebook nbdev would render (folders starting with `_` or `.` skipped)."
    return sorted(p for p in nbs.rglob("*.ipynb")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(nbs).parts))

# nbdev warns, with the whole cell's source (15 lines a cell, 480 lines a build), about each cell that holds imports
# beside other code: it runs the whole cell to render the page's docs. Those cells are the pages' hidden test set-up,
# which runs as it does under nbdev-test; the build counts them per notebook and says so in one line.
_MIXED_CELL = "Found cells containing imports and other code"
MIXED_CELLS: dict = {}  # notebook → how many of its cells nbdev ran whole


def process_nb(src: Path, dest: Path) -> Path:
    "Run nbdev's doc processors on one notebook, writing the page Quarto would render."
    from fastcore.nbio import read_nb, write_nb
    from nbdev.processors import FilterDefaults
    import atexit
    nb = read_nb(src)
    cwd = os.getcwd()
    os.chdir(src.parent)  # cells run to render docs read fixtures relative to the notebook, as under nbdev-test
    # each IPython shell the processors start asks to reset itself at exit, a full garbage collection each: in one
    # process that renders every page (the tests) that is minutes of exit; the shells hold nothing to save
    made, register = [], atexit.register
    atexit.register = lambda f, *a, **k: (made.append(f), register(f, *a, **k))[1]
    try:
        with warnings.catch_warnings(record=True) as said:
            FilterDefaults()(nb)
        for w in said:
            if _MIXED_CELL in str(w.message): MIXED_CELLS[src.name] = MIXED_CELLS.get(src.name, 0) + 1
            else: warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    finally:
        atexit.register = register
        os.chdir(cwd)
        for f in made:
            if getattr(f, "__name__", "") == "atexit_operations": atexit.unregister(f)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_nb(nb, dest)
    return dest

_CELL_KEYS = {"cell_type", "source", "metadata", "outputs", "execution_count", "id", "attachments"}

def read_page(page: Path):
    "A processed page as an nbformat node (nbdev leaves private keys such as `has_sd` on cells)."
    import nbformat
    d = json.loads(Path(page).read_text(encoding="utf-8"))
    for c in d["cells"]:
        for k in set(c) - _CELL_KEYS: del c[k]
        c.get("metadata", {}).pop("execution", None)  # timings execnb adds while running show_doc cells
    return nbformat.reads(json.dumps(d), as_version=4)

def stage(out: Path = ROOT/"_proc", only: list | None = None) -> list:
    "Process every notebook (or those in `only`) into `out` next to `_quarto.yml` and the site files; returns the pages."
    pages, failed = [], []
    MIXED_CELLS.clear()
    for nb in (notebooks() if only is None else [Path(p).resolve() for p in only]):
        try: pages.append(process_nb(nb, out/nb.relative_to(NBS)))
        except Exception as e: failed.append(nb); print(f"FAILED {nb.relative_to(ROOT)}: {str(e)[-300:]}", file=sys.stderr)
    if MIXED_CELLS:
        print(f"{sum(MIXED_CELLS.values())} cells with imports beside other code ran whole to render their pages: "
              + ", ".join(f"{k} {v}" for k, v in sorted(MIXED_CELLS.items())), file=sys.stderr)
    if failed: raise SystemExit(f"{len(failed)} notebooks failed to process: {', '.join(str(f.relative_to(NBS)) for f in failed)}")
    shutil.copy2(ROOT/"_quarto.yml", out/"_quarto.yml")
    for f in SITE_FILES: shutil.copy2(NBS/f, out/f)
    return pages

# ---------------------------------------------------------------------------------------------------------------
# A processed notebook as pandoc Markdown (the step Quarto performs before calling pandoc)

_DIRECTIVE = re.compile(r"^#\|\s*([\w-]+)\s*:?\s*(.*?)\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

def directives(source: str) -> tuple:
    "A code cell's leading `#| key: value` lines as a dict, and the code after them."
    import yaml
    opts, lines = {}, source.splitlines()
    while lines and _DIRECTIVE.match(lines[0]):
        k, v = _DIRECTIVE.match(lines[0]).groups()
        try: opts[k] = yaml.safe_load(v) if v else True
        except yaml.YAMLError: opts[k] = v
        lines.pop(0)
    return opts, "\n".join(lines).strip("\n")

def front_matter(nb) -> tuple:
    "The YAML front matter nbdev puts in the first raw cell (dict) and the cells after it."
    import yaml
    cells = list(nb.cells)
    if cells and cells[0].cell_type == "raw" and cells[0].source.lstrip().startswith("---"):
        return yaml.safe_load(cells[0].source.strip().strip("-")) or {}, cells[1:]
    return {}, cells

def _fence(text: str, info: str) -> str:
    "A fenced block longer than any backtick run inside `text`."
    n = max([3] + [len(m) + 1 for m in re.findall(r"`{3,}", text)])
    return f"{'`' * n}{info}\n{text.rstrip()}\n{'`' * n}"

def _text(v) -> str: return "".join(v) if isinstance(v, list) else str(v)

_MIME_ORDER = ("image/png", "image/jpeg", "image/svg+xml", "text/html", "text/markdown", "text/plain")

def _output_md(o: dict, asis: bool, figure) -> str:
    "One cell output as Markdown: the richest representation a static page can show."
    kind = o.get("output_type")
    if kind == "stream":
        return f"::: {{.cell-output .cell-output-{o.get('name', 'stdout')}}}\n{_fence(_ANSI.sub('', _text(o['text'])), '')}\n:::"
    if kind == "error":
        return f"::: {{.cell-output .cell-output-error}}\n{_fence(_ANSI.sub('', chr(10).join(o.get('traceback', []))), '')}\n:::"
    data = o.get("data", {})
    mime = next((m for m in _MIME_ORDER if m in data), None)
    if mime is None: return ""  # e.g. a bare widget view: nothing a static page can draw
    v = _text(data[mime])
    if mime in ("image/png", "image/jpeg"): body = f"![]({figure(base64.b64decode(v), mime.split('/')[1])})"
    elif mime in ("image/svg+xml", "text/html"): body = _fence(v, "{=html}")
    elif mime == "text/markdown":
        if asis: return v
        body = v
    else: body = _fence(v, "")
    return f"::: {{.cell-output .cell-output-display}}\n{body}\n:::"

def page_markdown(nb, figure) -> tuple:
    "(front matter, pandoc Markdown) of a processed notebook; `figure(bytes, ext)` stores an image, returns its URL."
    meta, cells, out = *front_matter(nb), []
    for c in cells:
        if c.cell_type == "markdown": out.append(c.source)
        elif c.cell_type == "raw" and c.source.strip(): out.append(c.source)  # Quarto passes raw cells through
        elif c.cell_type == "code":
            opts, code = directives(c.source)
            if opts.get("include") is False: continue
            parts = [] if opts.get("echo") is False or not code.strip() else [_fence(code, "python")]
            if opts.get("output") is not False:
                parts += [s for o in c.get("outputs", []) if (s := _output_md(o, opts.get("output") == "asis", figure))]
            if parts: out.append("::: {.cell}\n" + "\n\n".join(parts) + "\n:::")
    return meta, "\n\n".join(out) + "\n"

# ---------------------------------------------------------------------------------------------------------------
# The site around the pages: output names, titles, sidebar, navbar, links

def output_name(rel: str, meta: dict) -> str:
    "Where a page renders, relative to the site root (nbdev's `output-file` drops the number prefix)."
    d = os.path.dirname(rel)
    return os.path.join(d, meta["output-file"]) if meta.get("output-file") else str(Path(rel).with_suffix(".html"))

def source_title(nb_path: Path) -> str:
    "A notebook's title as nbdev derives it: the H1 of its first Markdown cell (else its file name)."
    for c in json.loads(Path(nb_path).read_text(encoding="utf-8"))["cells"]:
        if c["cell_type"] == "markdown":
            m = re.match(r"\s*#\s+(.+)", _text(c["source"]))
            return m.group(1).strip() if m else Path(nb_path).stem
    return Path(nb_path).stem

class Site:
    "What every page needs to know about the others: output names, titles, the sidebar and navbar."
    def __init__(self, nbs: Path = NBS, quarto: Path = ROOT/"_quarto.yml"):
        import yaml
        from nbdev.config import get_config
        from nbdev.doclinks import nbpath2html  # the name nbdev writes as `output-file` (drops the number prefix)
        self.nbs, self.q = nbs, yaml.safe_load(quarto.read_text(encoding="utf-8"))
        side = yaml.safe_load((nbs/"sidebar.yml").read_text(encoding="utf-8"))
        self.sidebar = side.get("website", {}).get("sidebar", {}).get("contents", [])
        self.pages = {str(p.relative_to(nbs)): p for p in notebooks(nbs)}
        self.titles = {rel: source_title(p) for rel, p in self.pages.items()}
        self.outputs = {rel: output_name(rel, {"output-file": nbpath2html(p).name}) for rel, p in self.pages.items()}
        cfg = get_config(path=nbs.parent)  # nbdev writes `name` in backticks as a link under doc_host + doc_baseurl
        self.doc_url = (cfg.doc_host + cfg.doc_baseurl).rstrip("/")

    def html_title(self, title: str) -> str:
        "The browser title of a page: its own title, then the site's (once, on the home page)."
        import html
        site = self.q.get("website", {}).get("title", "")
        return html.escape(title if title == site or not site else f"{title} – {site}")

    def href(self, here: str, rel: str) -> str:
        "The link from page `here` (a notebook path) to the rendered page of notebook `rel`."
        return os.path.relpath(self.outputs[rel], os.path.dirname(self.outputs[here]) or ".")

    def link_map(self, here: str) -> dict:
        "Every way page `here` names another page (relative notebook path, or nbdev's absolute doc URL) → its rendered file."
        base = os.path.dirname(here) or "."
        links = {os.path.relpath(rel, base): self.href(here, rel) for rel in self.pages}
        return {**links, **{f"{self.doc_url}/{self.outputs[rel]}": self.href(here, rel) for rel in self.pages}}

    def _entries(self, node) -> list:
        "sidebar.yml contents → [(title, notebook rel | None, children)]."
        if isinstance(node, list): return [e for n in node for e in self._entries(n)]
        if isinstance(node, str): return [(self.titles.get(node, node), node, [])] if node in self.pages else []
        if "section" in node: return [(node["section"], None, self._entries(node.get("contents", [])))]
        if "auto" in node:
            return [(self.titles[r], r, []) for r in sorted(self.pages) if fnmatch.fnmatch(r, node["auto"]) and "/" not in r.replace(os.path.dirname(node["auto"]), "", 1).lstrip("/")]
        if "href" in node: return [(node.get("text") or self.titles.get(node["href"], node["href"]), node["href"], [])]
        return []

    def sidebar_html(self, here: str) -> str:
        "The sidebar for page `here`, links relative to it, the current page marked."
        import html
        def ul(entries):
            items = []
            for title, rel, kids in entries:
                if rel is None: items.append(f'<li class="sidebar-section"><span>{html.escape(title)}</span>{ul(kids)}</li>')
                else:
                    cur = ' class="active" aria-current="page"' if rel == here else ""
                    items.append(f'<li><a href="{html.escape(self.href(here, rel))}"{cur}>{html.escape(title)}</a></li>')
            return "<ul>" + "".join(items) + "</ul>"
        # on a phone the list folds behind a "Pages" button (a checkbox and its label: no script); wider, it is open
        toggle = ('<input type="checkbox" id="sidebar-toggle" aria-controls="sidebar-pages">'
                  '<label for="sidebar-toggle">Pages</label>')
        pages = ul(self._entries(self.sidebar)).replace("<ul>", '<ul id="sidebar-pages">', 1)
        return f'<nav id="sidebar" aria-label="site">{toggle}{pages}</nav>'

    def navbar_html(self, here: str) -> str:
        "The top bar: site title and the navbar links of `_quarto.yml`."
        import html
        w = self.q.get("website", {})
        links = [f'<a href="{html.escape(self.href(here, i["href"]))}">{html.escape(i["text"])}</a>'
                 for i in w.get("navbar", {}).get("left", []) if i.get("href") in self.pages]
        home = html.escape(self.href(here, "index.ipynb")) if "index.ipynb" in self.pages else "#"
        search = ('<div id="search-box"><input id="search" type="search" placeholder="Search" aria-label="search the docs"'
                  ' autocomplete="off"><ol id="search-results" hidden></ol></div>')
        return (f'<header id="navbar"><a class="site-title" href="{home}">{html.escape(w.get("title", ""))}</a>'
                f'{"".join(links)}{search}</header>')

# Rewrites links to notebooks into links to their rendered pages (the map comes in the page metadata).
LINKS_LUA = r"""
local links = {}
local function meta(m)
  for k, v in pairs(m["site-links"] or {}) do links[k] = pandoc.utils.stringify(v) end
  m["site-links"] = nil
  return m
end
local function link(el)
  local target, frag = el.target:match("^([^#]*)(#?.*)$")
  target = target:gsub("^%./", "")
  if links[target] then el.target = links[target] .. frag end
  return el
end
return {{Meta = meta}, {Link = link}}
"""

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$html-title$</title>
$if(description)$<meta name="description" content="$description$">$endif$
<link rel="stylesheet" href="$root$site.css">
<link rel="stylesheet" href="$root$styles.css">
<style>
$highlighting-css$
</style>
<script src="$root$search-index.js" defer></script>
<script src="$root$search.js" defer></script>
</head>
<body>
$navbar$
<div id="layout">
$sidebar$
<main id="content">
<header id="title-block-header">
<h1 class="title">$title$</h1>
$if(description)$<p class="description">$description$</p>$endif$
</header>
$if(toc)$<nav id="TOC" aria-label="on this page"><h2>On this page</h2>$table-of-contents$</nav>$endif$
$body$
</main>
</div>
</body>
</html>
"""

# Layout of the offline site; `nbs/styles.css` (the same file Quarto uses) is loaded after it.
SITE_CSS = """
body { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #212529; }
a { color: #2780e3; text-decoration: none; } a:hover { text-decoration: underline; }
#navbar { background: #2780e3; padding: 0.6rem 1.2rem; display: flex; gap: 1.4rem; align-items: baseline; }
#navbar a { color: #fff; } #navbar .site-title { font-weight: 600; font-size: 1.2rem; }
#layout { display: flex; align-items: flex-start; }
#sidebar { flex: 0 0 15rem; padding: 1rem 0.8rem; font-size: 0.9rem; position: sticky; top: 0; max-height: 100vh; overflow-y: auto; }
#sidebar ul { list-style: none; margin: 0; padding-left: 0.7rem; } #sidebar > ul { padding-left: 0; }
#sidebar li { margin: 0.15rem 0; } #sidebar .sidebar-section > span { display: block; font-weight: 600; margin-top: 0.6rem; }
#sidebar a { color: #495057; } #sidebar a.active { color: #2780e3; font-weight: 600; }
#sidebar-toggle, #sidebar > label { display: none; }
#content { flex: 1 1 auto; min-width: 0; max-width: 58rem; padding: 1rem 2rem 3rem; }
#title-block-header .description { font-size: 1.1rem; color: #6c757d; margin-top: -0.4rem; }
#TOC { font-size: 0.85rem; border-left: 2px solid #dee2e6; padding-left: 0.8rem; margin: 1rem 0; }
#TOC h2 { font-size: 0.9rem; margin: 0 0 0.3rem; } #TOC ul { padding-left: 1rem; margin: 0; }
pre, code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.85em; }
pre { background: #f7f7f7; padding: 0.6rem 0.8rem; overflow-x: auto; border-radius: 3px; }
.cell { margin: 0.8rem 0 1.2rem; } .cell-output-display { overflow-x: auto; }
.cell-output-display img { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.9em; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #dee2e6; text-align: left; vertical-align: top; }
table.dataframe { border: 0; } table.dataframe th, table.dataframe td { border: 0; border-bottom: 1px solid #dee2e6; }
table.dataframe thead th { border-bottom: 2px solid #adb5bd; text-align: right; }
hr { border: 0; border-top: 1px solid #dee2e6; margin: 1.5rem 0; }
div[class^="callout"] { border-left: 4px solid #2780e3; background: #f3f8fe; padding: 0.4rem 0.9rem; margin: 1rem 0; }
.mr-snapshot { border: 1px dashed #adb5bd; padding: 0.3rem 0.8rem; border-radius: 4px; }
.mr-controls { color: #495057; font-size: 0.9em; }
#search-box { margin-left: auto; position: relative; }
#search { font: inherit; font-size: 0.9rem; padding: 0.2rem 0.5rem; border: 0; border-radius: 3px; width: 14rem; max-width: 60vw; }
#search-results { position: absolute; right: 0; z-index: 10; background: #fff; color: #212529; width: 26rem; max-width: 90vw;
  margin: 0.3rem 0 0; padding: 0.3rem 0.6rem 0.3rem 1.8rem; box-shadow: 0 2px 8px rgba(0,0,0,.25); border-radius: 4px; }
#search-results li { margin: 0.35rem 0; } #search-results a { color: #2780e3; }
#search-results small { display: block; color: #6c757d; }
/* a phone: the sidebar above the page, the page the width of the screen; wide tables scroll inside their cell */
@media (max-width: 48rem) {
  #layout { flex-direction: column; }
  #sidebar { position: static; flex: none; width: 100%; box-sizing: border-box; border-bottom: 1px solid #dee2e6;
    padding: 0.4rem 0.8rem; max-height: none; overflow: visible; }
  #sidebar-toggle { display: block; position: absolute; opacity: 0; width: 1px; height: 1px; }
  #sidebar > label { display: inline-block; cursor: pointer; color: #2780e3; font-weight: 600; padding: 0.2rem 0; }
  #sidebar > label::before { content: "☰ "; }
  #sidebar-toggle:checked + label::before { content: "✕ "; }
  #sidebar-toggle:focus-visible + label { outline: 2px solid #2780e3; }
  #sidebar > ul { display: none; padding-bottom: 0.4rem; }
  #sidebar-toggle:checked ~ ul { display: block; }
  #content { max-width: none; width: 100%; box-sizing: border-box; padding: 0.8rem 0.8rem 2rem; }
  #navbar { flex-wrap: wrap; gap: 0.8rem; }
  #content table { display: block; overflow-x: auto; }
}
"""

def pandoc_exe() -> str:
    "The pandoc binary, or a clear error naming the package that brings it."
    exe = shutil.which("pandoc")
    if not exe: raise SystemExit("pandoc is not installed: the offline docs need it (apt-get install pandoc)")
    return exe

def render_page(page: Path, rel: str, dest: Path, site: Site) -> Path:
    "Render one processed page (notebook `rel` of nbs/) into the site at `dest`; returns the HTML file."
    import yaml
    out = dest/site.outputs[rel]
    out.parent.mkdir(parents=True, exist_ok=True)
    media, n = out.parent/f"{out.stem}_files", [0]
    def figure(data: bytes, ext: str) -> str:
        n[0] += 1; media.mkdir(exist_ok=True)
        (media/f"figure-{n[0]}.{ext}").write_bytes(data)
        return f"{media.name}/figure-{n[0]}.{ext}"
    if media.exists(): shutil.rmtree(media)
    meta, md = page_markdown(read_page(page), figure)
    meta = {**meta, "title": meta.get("title") or site.titles.get(rel, Path(rel).stem), "site-links": site.link_map(rel)}
    meta.pop("output-file", None)
    root = os.path.relpath(dest, out.parent).replace(os.sep, "/") + "/"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t/"page.md").write_text("---\n" + yaml.safe_dump(meta, allow_unicode=True) + "---\n\n" + md, encoding="utf-8")
        (t/"links.lua").write_text(LINKS_LUA, encoding="utf-8")
        (t/"page.html5").write_text(TEMPLATE, encoding="utf-8")
        cmd = [pandoc_exe(), str(t/"page.md"), "-f", "markdown", "-t", "html5", "--standalone", "--toc", "--toc-depth=3",
               f"--template={t/'page.html5'}", f"--lua-filter={t/'links.lua'}", "-o", str(out),
               "-V", f"root={'' if root == './' else root}", "-V", f"html-title={site.html_title(meta['title'])}",
               "-V", f"sidebar={site.sidebar_html(rel)}", "-V", f"navbar={site.navbar_html(rel)}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode: raise RuntimeError(f"pandoc failed on {rel}: {r.stderr[-2000:]}")
    return out

def render_site(proc: Path, dest: Path, pages: list | None = None) -> list:
    "Render processed pages (all under `proc`, or `pages`) into an offline site at `dest`; returns the HTML files."
    site, dest = Site(), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest/"site.css").write_text(SITE_CSS.lstrip(), encoding="utf-8")
    shutil.copy2(NBS/"styles.css", dest/"styles.css")
    pages = sorted(Path(proc).rglob("*.ipynb")) if pages is None else pages
    files = [render_page(p, str(Path(p).relative_to(proc)), dest, site) for p in pages]
    finish_links(files, repository_url())
    write_search(files, dest)
    return files

# ---------------------------------------------------------------------------------------------------------------
# Links once every page exists: source links from the one repository URL, anchors that point at what is there

def repository_url() -> str | None:
    "The repository the source links point into: pyproject's [project.urls] Repository, None when unset or a placeholder."
    import tomllib
    url = tomllib.loads((ROOT/"pyproject.toml").read_text(encoding="utf-8")).get("project", {}).get("urls", {}).get("Repository")
    host = re.sub(r"^[a-z]+://", "", url or "").split("/")[0]
    return None if not host or host.endswith((".invalid", ".example", ".test")) or host == "example.com" else url.rstrip("/")

_SOURCE_LINK = re.compile(r'<p><a\s+href="(?P<url>[^"]*/blob/[^"]*)"\s+target="_blank"\s+style="float:right; font-size:smaller">source</a></p>\s*')
_HREF = re.compile(r'href="(?P<path>[^":#]*\.html)?#(?P<frag>[^"]+)"')
_ID = re.compile(r'\bid="([^"]+)"')

# The search box: a prebuilt index of every section (a script, so it loads from file:// where fetch cannot) and a
# few lines of plain JavaScript that match every query word. The ranking puts what a reader looks for first: a page
# whose title holds the words, then headings that say them as words ("One query, three weights"), then headings
# that only contain them (`query_words`, an internal); a guide page (home, tutorials, explanations) before an API
# page on a tie. No library, no network.
SEARCH_JS = r"""
window.MINIRAG_RANK = function (docs, query) {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const esc = w => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const whole = words.map(w => new RegExp("(^|[^\\p{L}\\p{N}_])" + esc(w) + "($|[^\\p{L}\\p{N}_])", "u"));
  function score(d) {
    const [page, head = ""] = d.t.toLowerCase().split(" \u203a ");  // "Page › Heading"
    let s = d.g ? 1 : 0;
    words.forEach((w, i) => {
      if (whole[i].test(page)) s += head ? 6 : 12; else if (page.includes(w)) s += 3;
      if (whole[i].test(head)) s += 4; else if (head.includes(w)) s += 2;
    });
    return s;
  }
  const hits = [];
  for (const d of docs) {
    const t = d.t.toLowerCase(), x = d.x.toLowerCase();
    if (words.length && words.every(w => t.includes(w) || x.includes(w))) hits.push([score(d), hits.length, d]);
  }
  return hits.sort((a, b) => b[0] - a[0] || a[1] - b[1]).map(h => h[2]);
};
(function () {
  const base = new URL(".", document.currentScript.src);
  function ready() {
    const box = document.getElementById("search"), list = document.getElementById("search-results");
    const docs = window.MINIRAG_SEARCH || [];
    if (!box || !list) return;
    box.addEventListener("input", function () {
      const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      list.innerHTML = "";
      if (!words.length) { list.hidden = true; return; }
      const hits = window.MINIRAG_RANK(docs, box.value);
      for (const d of hits.slice(0, 10)) {
        const li = document.createElement("li"), a = document.createElement("a"), s = document.createElement("small");
        a.href = new URL(d.u, base).href; a.textContent = d.t;
        const i = Math.max(0, d.x.toLowerCase().indexOf(words[0]) - 40);
        s.textContent = (i ? "…" : "") + d.x.slice(i, i + 120) + "…";
        li.append(a, s); list.append(li);
      }
      if (!hits.length) { const li = document.createElement("li"); li.textContent = "no match"; list.append(li); }
      list.hidden = false;
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready); else ready();
})();
"""

GUIDE_FOLDERS = ("tutorials/", "explanations/")
_SECTION = re.compile(r'<h([23])[^>]*\bid="([^"]+)"[^>]*>(.*?)</h\1>', re.S)
_TAG = re.compile(r"<[^>]+>")

def search_index(files: list, dest: Path) -> list:
    "One entry per page and per section of it: its URL (relative to the site), title and text."
    import html
    out = []
    for f in files:
        page = f.read_text(encoding="utf-8")
        body = page.split('<main id="content">', 1)[-1].split("</main>", 1)[0]
        body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
        body = re.sub(r'<nav id="TOC".*?</nav>', " ", body, flags=re.S)
        title = html.unescape(_TAG.sub("", (re.search(r'<h1 class="title">(.*?)</h1>', body, re.S) or [None, f.stem])[1])).strip()
        title = " ".join(title.split())
        url = f.relative_to(dest).as_posix()
        guide = 1 if url == "index.html" or url.startswith(GUIDE_FOLDERS) else 0  # ranks before API pages on a tie
        heading = lambda h: " ".join(html.unescape(_TAG.sub("", h)).split())
        cuts = [(0, "", title)] + [(m.start(), m[2], f"{title} › {heading(m[3])}") for m in _SECTION.finditer(body)]
        for (at, anchor, name), nxt in zip(cuts, [c[0] for c in cuts[1:]] + [len(body)]):
            text = " ".join(html.unescape(_TAG.sub(" ", body[at:nxt])).split())
            out.append(dict(u=url + (f"#{anchor}" if anchor else ""), t=name, x=text[:1500], g=guide))
    return out

def write_search(files: list, dest: Path):
    dest = Path(dest)
    (dest/"search-index.js").write_text("window.MINIRAG_SEARCH = " + json.dumps(search_index(files, dest), ensure_ascii=False)
                                       + ";\n", encoding="utf-8")
    (dest/"search.js").write_text(SEARCH_JS.lstrip(), encoding="utf-8")

def finish_links(files: list, repo: str | None):
    "Drop source links when no repository is configured; point an anchor that does not exist at its nearest parent"
    "(`api.html#index.open` → `#index`, the class), or at the page."
    ids = {f.resolve(): set(_ID.findall(f.read_text(encoding="utf-8"))) for f in files}
    for f in files:
        text = f.read_text(encoding="utf-8")
        if repo is None:
            text = _SOURCE_LINK.sub("", text)

        def anchor(m):
            target = (f.parent/m["path"]).resolve() if m["path"] else f.resolve()
            if target not in ids or m["frag"] in ids[target]:
                return m.group(0)
            parts = m["frag"].split(".")
            while parts and ".".join(parts) not in ids[target]:
                parts.pop()
            return f'href="{m["path"] or ""}#{".".join(parts)}"' if parts else f'href="{m["path"] or f.name}"'
        f.write_text(_HREF.sub(anchor, text), encoding="utf-8")

def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = ROOT/"_proc"
    if "--html" in argv: pandoc_exe()  # say what is missing before minutes of processing
    pages = stage(out)
    print(f"processed {len(pages)} notebooks into {out.relative_to(ROOT)}/")
    if "--html" in argv:
        dest = Path(argv[argv.index("--html") + 1])
        files = render_site(out, dest, pages)
        print(f"rendered {len(files)} pages into {dest}/ (open {dest/'index.html'})")
    elif shutil.which("quarto"): return subprocess.run(["quarto", "render", str(out)]).returncode
    else: print("Quarto is not installed: pages processed, not rendered (use --html DIR for an offline preview)")
    return 0

if __name__ == "__main__": sys.exit(main())
