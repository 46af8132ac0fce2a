"""Build the held-out BEIR-format evaluation sets in bench/eval_sets/ from public Debian material.

    python tools/build_eval_sets.py [--out bench/eval_sets] [--shared ../shared/eval] [--docs 200]

These sets are never used to choose a constant (search.DOC_CONTEXT, search.DOC_BM25, fusion constants): they exist
to check on data nobody tuned on that hybrid stays at least as good as its better side (SPEC R-Q11).

- `mandesc-de`, `mandesc-fr`: German / French manual pages (Debian packages `manpages-de`, `manpages-fr`, GPL;
  fetched with `apt-get download`, rendered with `man`). Query = the page's NAME description (the text after
  "name - "); document = the page without its NAME section, first `MAX_DOC_CHARS` characters.
  The packaged English model does not know these languages: the vector side carries little signal.
- `debfaq-ruen`: cross-language — the Russian questions of `debfaq-ru` against the English answers of `debfaq-en`
  (both from the shared evaluation folder, Debian FAQ, DFSG-free), same judgements.
- `mandesc-ru`: Russian manual pages (`manpages-ru`), built as the German and French ones.
- `mandesc-ruen`: cross-language — the Russian pages' NAME descriptions against the English pages of the same
  section and file name (`manpages`, `manpages-dev`: the man-pages project that `manpages-ru` translates), picked
  and cut as `mandesc-ru`; a Russian page without an English original is skipped.
- `debdesc-ru`, `debdesc-ruen`, `debdesc-deen`: Debian's translated package descriptions (DDTP, apt's
  `Translation-ru` / `Translation-de` / `Translation-en`, fetched by `apt-get update` into a private lists folder).
  Query = a package's translated short description; document = its long description, in the query's language
  (`debdesc-ru`) or in English (`-ruen`, `-deen`: questions in one language over documents in the other), with the
  other picked packages' descriptions as distractors. A translation is paired with its English text by the
  `Description-md5` both carry. `-deen` takes only packages outside the shared `debdesc-en` corpus; Russian
  translations cover almost only those packages, so the Russian sets share English documents with it, never queries.

Deterministic: pages are picked by a hash of their file name, so a rebuild gives the same files.
"""
import argparse, gzip, hashlib, json, os, re, shutil, subprocess, sys, tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAX_DOC_CHARS = 1500
NAME_HEADS = {"de": ("BEZEICHNUNG", "NAME"), "fr": ("NOM", "NAME"), "ru": ("ИМЯ", "НАЗВАНИЕ", "NAME"), "en": ("NAME",)}
ENGLISH_MAN = ("manpages", "manpages-dev")  # the English man-pages project, which manpages-ru mostly translates
DESC_DOCS, DESC_QUERIES = 300, 150  # per package-description set: a few minutes to embed with either model

def render(page: Path) -> str:
    "A man page as plain text: no hyphenation, no justification, very wide lines (one paragraph per line)."
    env = dict(os.environ, MANWIDTH="1000", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
    r = subprocess.run(["man", "--nh", "--nj", "-E", "UTF-8", "-l", str(page)], capture_output=True, env=env, timeout=60)
    return re.sub(r".\x08", "", r.stdout.decode("utf-8", "replace"))

def split_page(text: str, lang: str):
    "(description, body) of a rendered page, or None when it has no usable NAME line."
    lines = text.splitlines()
    heads = [i for i, l in enumerate(lines) if l and not l[0].isspace() and l.strip() == l.strip().upper() and len(l.strip()) > 2]
    name = next((i for i in heads if lines[i].strip() in NAME_HEADS[lang]), None)
    if name is None: return None
    nxt = next((i for i in heads if i > name), len(lines))
    desc_line = " ".join(l.strip() for l in lines[name + 1:nxt] if l.strip())
    m = re.search(r"\s[-–—]\s+(.+)$", desc_line)
    if not m or len(m.group(1).split()) < 3: return None
    body = [l.strip() for i, l in enumerate(lines) if i not in range(name, nxt) and i != 0 and i != len(lines) - 1]
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip()
    return m.group(1).strip(), body[:MAX_DOC_CHARS].rsplit(" ", 1)[0]

def write_set(out: Path, name: str, corpus: list, queries: list, qrels: list, meta: dict):
    d = out/name
    if d.exists(): shutil.rmtree(d)
    (d/"qrels").mkdir(parents=True)
    with open(d/"corpus.jsonl", "w", encoding="utf-8") as f:
        for r in corpus: f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(d/"queries.jsonl", "w", encoding="utf-8") as f:
        for r in queries: f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(d/"qrels"/"test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, c in qrels: f.write(f"{q}\t{c}\t1\n")
    (d/"meta.json").write_text(json.dumps(dict(meta, docs=len(corpus), queries=len(queries)), indent=1, ensure_ascii=False) + "\n")
    print(f"{name}: {len(corpus)} docs, {len(queries)} queries", file=sys.stderr)

def unpack(pkg: str, work: Path) -> tuple[str, Path]:
    "(the .deb's file name, the folder it was unpacked into) of a Debian package fetched with `apt-get download`."
    subprocess.run(["apt-get", "download", pkg], cwd=work, check=True, capture_output=True, timeout=300)
    deb = next(work.glob(f"{pkg}_*.deb"))
    x = work/f"x-{pkg}"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(x)], check=True)
    return deb.name, x

def english_page(p: Path, english: list) -> str | None:
    "The body of the English page of the same section and file name as `p` in the unpacked `english` packages."
    page = next((m for x in english if (m := x/"usr/share/man"/p.parent.name/p.name).is_file()), None)
    got = page and split_page(render(page), "en")
    return got[1] if got else None

def manpage_set(out: Path, lang: str, n_docs: int, work: Path, docs_in_english: bool = False):
    "`mandesc-<lang>` (or `mandesc-<lang>en`: the same questions over the English pages of the same names)."
    deb, x = unpack(f"manpages-{lang}", work)
    english = [unpack(p, work) for p in ENGLISH_MAN] if docs_in_english else []
    pages = sorted((x/"usr/share/man"/lang).glob("man[1-8]/*.gz"), key=lambda p: hashlib.sha1(p.name.encode()).hexdigest())
    corpus, queries, qrels, seen = [], [], [], set()
    for p in pages:
        if len(corpus) >= n_docs: break
        got = split_page(render(p), lang)
        if not got: continue
        desc, body = got
        if docs_in_english: body = english_page(p, [x for _, x in english]) or ""
        if desc.lower() in seen or len(body) < 200: continue
        seen.add(desc.lower())
        did = p.name[:-3]
        corpus.append(dict(_id=did, title="", text=body))
        queries.append(dict(_id=f"q-{did}", text=desc))
        qrels.append((f"q-{did}", did))
    name, source = f"mandesc-{lang}", f"Debian package {deb} (GPL)"
    task = "man page NAME description -> the page (NAME section removed)"
    if docs_in_english:
        name, task = f"mandesc-{lang}en", "translated NAME description -> the English page of that name (NAME removed)"
        source = f"Debian packages {deb} + {' + '.join(d for d, _ in english)} (GPL and other free licences)"
    write_set(out, name, corpus, queries, qrels, dict(lang=f"{lang}->en" if docs_in_english else lang, source=source,
              task=task, tuning="held out: never used to choose a constant"))

def cross_language_set(out: Path, shared: Path):
    en, ru = shared/"debfaq-en", shared/"debfaq-ru"
    corpus = [json.loads(l) for l in open(en/"corpus.jsonl", encoding="utf-8") if l.strip()]
    queries = [json.loads(l) for l in open(ru/"queries.jsonl", encoding="utf-8") if l.strip()]
    ids = {r["_id"] for r in corpus}
    qrels = [tuple(l.rstrip("\n").split("\t")[:2]) for l in open(ru/"qrels"/"test.tsv", encoding="utf-8")][1:]
    qrels = [(q, c) for q, c in qrels if c in ids]
    qs = {q for q, _ in qrels}
    write_set(out, "debfaq-ruen", corpus, [q for q in queries if q["_id"] in qs], qrels,
              dict(lang="ru->en", source="shared debfaq-ru questions + debfaq-en answers (Debian FAQ, DFSG-free)",
                   task="Russian FAQ question -> English answer", tuning="held out: never used to choose a constant"))

def by_hash(names):
    "Names in a fixed pseudo-random order (a hash of each), so a rebuild picks the same ones."
    return sorted(names, key=lambda n: hashlib.sha1(n.encode()).hexdigest())

def fetch_translations(work: Path, langs=("en", "ru", "de")) -> Path:
    "apt's Translation-* lists of the system's sources, fetched into a private folder (the system's lists untouched)."
    lists = work/"lists"
    (lists/"partial").mkdir(parents=True)
    (work/"cache"/"archives"/"partial").mkdir(parents=True)
    opts = ["-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Cache={work/'cache'}",
            "-o", f"Acquire::Languages={','.join(langs)}", "-o", "Debug::NoLocking=1"]
    subprocess.run(["apt-get", *opts, "update"], check=True, capture_output=True, timeout=600)
    return lists

def translations(lists: Path, lang: str) -> dict:
    "{Description-md5: (package, short, long)} of the main archive's Translation-<lang> in `lists`."
    f = max(lists.glob(f"*_main_i18n_Translation-{lang}*"), key=lambda p: p.stat().st_size)  # the release, not updates
    text = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(f)], check=True, capture_output=True).stdout
    out = {}
    for rec in text.decode("utf-8", "replace").split("\n\n"):
        m = re.search(rf"^Package: (\S+)\nDescription-md5: (\w+)\nDescription-{lang}: (.*)\n?((?:^ .*\n?)*)", rec, re.M)
        if not m: continue
        body = "\n".join("" if l.strip() == "." else l[1:] for l in m.group(4).splitlines()).strip()
        out.setdefault(m.group(2), (m.group(1), m.group(3).strip(), body))
    return out

def desc_set(out: Path, name: str, queries_of: dict, docs_of: dict, skip: set, meta: dict):
    "Short description (from `queries_of`) -> long description (from `docs_of`) for packages both describe."
    picked, seen_q, seen_d = [], set(), set()
    pairs = {md5: (queries_of[md5], docs_of[md5]) for md5 in queries_of.keys() & docs_of.keys()}
    for md5 in by_hash(pairs):
        (pkg, short, _), (_, _, body) = pairs[md5]
        if pkg in skip or len(short.split()) < 3 or len(body) < 100: continue
        if short.lower() in seen_q or body in seen_d: continue
        seen_q.add(short.lower())
        seen_d.add(body)
        picked.append((pkg, short, body[:MAX_DOC_CHARS]))
        if len(picked) >= DESC_DOCS: break
    corpus = [dict(_id=pkg, title="", text=body) for pkg, _, body in picked]
    asked = picked[:DESC_QUERIES]  # the rest stay in the corpus as distractors
    queries = [dict(_id=f"q-{pkg}", text=short) for pkg, short, _ in asked]
    write_set(out, name, corpus, queries, [(f"q-{pkg}", pkg) for pkg, _, _ in asked],
              dict(meta, tuning="held out: never used to choose a constant"))

def description_sets(out: Path, shared: Path, work: Path):
    lists = fetch_translations(work)
    en, ru, de = (translations(lists, x) for x in ("en", "ru", "de"))
    src = "Debian bookworm main i18n Translation-{} (DDTP)"
    desc_set(out, "debdesc-ru", ru, ru, set(), dict(lang="ru", source=src.format("ru"),
             task="Russian package short description -> its Russian long description"))
    desc_set(out, "debdesc-ruen", ru, en, set(), dict(lang="ru->en", source=src.format("ru and -en"),
             task="Russian package short description -> its English long description"))
    shared_docs = shared/"debdesc-en"/"corpus.jsonl"
    skip = {json.loads(l)["_id"] for l in open(shared_docs, encoding="utf-8")} if shared_docs.is_file() else set()
    desc_set(out, "debdesc-deen", de, en, skip, dict(lang="de->en", source=src.format("de and -en"),
             task="German package short description -> its English long description (packages outside debdesc-en)"))

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO/"bench"/"eval_sets"))
    ap.add_argument("--shared", default=str(REPO.parent/"shared"/"eval"), help="the shared evaluation folder (for debfaq-ruen)")
    ap.add_argument("--docs", type=int, default=200, help="documents per man-page set")
    ap.add_argument("--langs", default="de,fr,ru")
    ap.add_argument("--cross-langs", default="ru", help="man-page sets whose questions ask over the English pages")
    ap.add_argument("--no-descriptions", action="store_true", help="skip the package-description sets")
    a = ap.parse_args(argv)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as t:
        for lang in filter(None, a.langs.split(",")): manpage_set(out, lang, a.docs, Path(t))
        for lang in filter(None, a.cross_langs.split(",")): manpage_set(out, lang, a.docs, Path(t), docs_in_english=True)
        if not a.no_descriptions: description_sets(out, Path(a.shared), Path(t))
    if (Path(a.shared)/"debfaq-ru").is_dir(): cross_language_set(out, Path(a.shared))
    return 0

if __name__ == "__main__": sys.exit(main())
