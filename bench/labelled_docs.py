"""The labelled document set the label benchmark measures: public Debian documentation in English and Russian, each
file with its kind (manual page, FAQ, guide chapter, changelog, licence, README).

    python bench/labelled_docs.py build DIR           # download the manifest's packages, write DIR/<path> for each row
    python bench/labelled_docs.py choose DEBS_DIR     # how the manifest was made: pick files from extracted packages

`build` fetches each package the manifest names with `apt-get download NAME=VERSION` (falling back to the current
version when the archive has moved on, and saying so), unpacks it with `dpkg-deb -x`, and writes the chosen members:
manual pages rendered to text by `man -l`, compressed text unpacked, HTML copied. The kind of a file is its gold label,
given by where Debian puts it (a page under `usr/share/man` is a manual page, `copyright` is a licence file), never by
reading it; the classifier under test only sees the text.
"""

import argparse, csv, gzip, os, random, re, shutil, subprocess, sys, tempfile
from urllib.parse import unquote
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "eval_sets" / "labels" / "manifest.tsv"
FIELDS = ("path", "label", "lang", "package", "version", "member")
PER_KIND = {
    "manpage": 45,
    "faq": 20,
    "guide": 40,
    "changelog": 40,
    "licence": 40,
    "readme": 40,
}  # per language, at most


def read_manifest(path: Path = MANIFEST) -> list[dict]:
    "The manifest's rows: corpus path, gold label, language, package, version and member inside the package."
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def render(member: Path, out: Path):
    "Write one package member as a document minirag reads: a manual page as text, gzip unpacked, HTML as it is."
    out.parent.mkdir(parents=True, exist_ok=True)
    if "/man/" in member.as_posix():
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
        page = subprocess.run(["man", "-l", "-P", "cat", str(member)], capture_output=True, env=env, check=True).stdout
        out.write_bytes(re.sub(rb".\x08", b"", page))  # overstrike bold and underline
    elif member.suffix == ".gz":
        out.write_bytes(gzip.decompress(member.read_bytes()))
    else:
        shutil.copyfile(member, out)


def _download(name: str, version: str, into: Path) -> Path:
    for spec in (f"{name}={version}", name):
        r = subprocess.run(["apt-get", "download", spec], cwd=into, capture_output=True, text=True)
        if r.returncode == 0:
            if spec == name:
                print(f"note: {name} {version} is no longer in the archive; used the current version", file=sys.stderr)
            return next(into.glob(f"{name}_*.deb"))
    raise SystemExit(f"apt-get download {name} failed: {r.stderr.strip()[:300]}")


def build(out: Path, rows: list[dict]):
    "Download, unpack and write every manifest row under `out`."
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for pkg in sorted({(r["package"], r["version"]) for r in rows}):
            deb = _download(*pkg, tmp)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / pkg[0])], check=True)
        for r in rows:
            render(tmp / r["package"] / r["member"], out / r["path"])
    print(f"{len(rows)} documents under {out}")


def _kind(member: str) -> str | None:
    "A package member's kind by Debian's layout, or None for a file the set leaves out."
    name = member.rsplit("/", 1)[-1]
    if "/share/man/" in member and re.search(r"\.\d\w*\.gz$", name):
        return "manpage"
    if re.match(r"changelog(\.Debian)?\.gz$", name):
        return "changelog"
    if name == "copyright":
        return "licence"
    if re.match(r"README(\.Debian)?(\.gz)?$", name):
        return "readme"
    if not name.endswith(".html") or re.match(r"(index|search|genindex|ld-idm|rn\d|.*\.txt)", name):
        return None  # tables of contents, search pages, link-only pages
    if "/FAQ/" in member:
        return "faq"
    if re.search(r"/(maint-guide|developers-reference|debian-reference|aptitude)", member) and re.search(
        r"(^ch\d|^[a-z-]+\.(en|ru)\.html$|^[a-z-]+\.html$)", name
    ):
        return "guide"
    return None


def _lang(member: str) -> str:
    return "ru" if re.search(r"(/ru/|[.-]ru[./]|-ru/|\.ru\.html$)", member) else "en"


def _corpus_path(member: str, lang: str) -> str:
    "Where a member lands in the corpus: its package path, text files given a `.txt` the converter reads."
    p = member.removesuffix(".gz")
    return p if p.endswith(".html") else p + ".txt"


def choose(debs: Path, seed: int = 29) -> list[dict]:
    "Pick up to PER_KIND files of each kind and language from packages unpacked as DEBS/<name>_<version>_<arch>/."
    found: dict[tuple, list] = {}
    for d in sorted(p for p in debs.iterdir() if p.is_dir()):
        name, version = d.name.split("_")[0], unquote(d.name.split("_")[1])  # an epoch is saved as %3a
        for f in sorted(d.rglob("*")):
            m = f.relative_to(d).as_posix()
            if f.is_file() and not f.is_symlink() and (k := _kind(m)) and f.stat().st_size > 200:
                lang = _lang(m)
                if k in ("changelog", "licence", "readme") and lang == "ru":
                    continue  # a package's Russian docs still carry English changelogs and copyright files
                found.setdefault((k, lang), []).append(
                    dict(label=k, lang=lang, package=name, version=version, member=m)
                )
    rows, rng = [], random.Random(seed)
    for (k, lang), got in sorted(found.items()):
        rows += sorted(rng.sample(got, min(PER_KIND[k], len(got))), key=lambda r: r["member"])
    seen = set()
    for r in rows:
        r["path"] = _corpus_path(r["member"], r["lang"])
        if r["path"] in seen:  # two packages ship the same file name (a shared FAQ folder): keep them apart
            r["path"] = f"{r['package']}/{r['path']}"
        seen.add(r["path"])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the documents of the manifest under DIR")
    b.add_argument("dir", type=Path)
    c = sub.add_parser("choose", help="rewrite the manifest from packages unpacked under DEBS_DIR")
    c.add_argument("debs", type=Path)
    a = ap.parse_args()
    if a.cmd == "build":
        build(a.dir, read_manifest())
    else:
        rows = choose(a.debs)
        MANIFEST.parent.mkdir(parents=True, exist_ok=True)
        with open(MANIFEST, "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, FIELDS, delimiter="\t", lineterminator="\n")
            w.writeheader()
            w.writerows({k: r[k] for k in FIELDS} for r in rows)
        counts = {}
        for r in rows:
            counts[(r["label"], r["lang"])] = counts.get((r["label"], r["lang"]), 0) + 1
        print(f"{len(rows)} rows → {MANIFEST}: {counts}")


if __name__ == "__main__":
    main()
