"""How well the embedding classifier tells kinds of documents apart, against a file-name/path keyword baseline, and the
softmax temperature that makes its confidences probabilities.

    python bench/bench_labels.py                       # builds the set in the temp folder on first use
    python bench/bench_labels.py --dir /tmp/labelled --no-json

The set is public Debian documentation (bench/labelled_docs.py, manifest in bench/eval_sets/labels): manual pages,
FAQ chapters, guide chapters, changelogs, copyright files and READMEs, in English and Russian. Each document is read
the way `classify try` reads it (converted, chunked, its opening chunks embedded by the index's model) against the
descriptions of TAXONOMY below. The documents are split in two halves by a hash of their path: the temperature is
the one minimising the negative log-likelihood of the gold labels on the first half; accuracy, calibration error and
the confidence curve are reported on the second half. The argmax, hence accuracy, does not depend on the temperature.
"""

import argparse, hashlib, json, re, sys, tempfile
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import labelled_docs

# the taxonomy measured: each description says what the document looks like, not what it is about
DESCRIPTIONS = {
    "manpage": "A manual page: NAME, SYNOPSIS, DESCRIPTION, OPTIONS and SEE ALSO sections about one command, file or "
    "function.",
    "faq": "Frequently asked questions: a list of questions, each one followed by its answer.",
    "guide": "A chapter of a handbook or guide: numbered sections explaining step by step how to do something.",
    "changelog": "A changelog: version entries, each with a list of changes, the maintainer's name, e-mail and date.",
    "licence": "Copyright and licence terms: copyright holders and years, licence names, permissions and disclaimer "
    "of warranty.",
    "readme": "A README with notes for users about a package: how it is set up on this system, caveats and tips.",
}
TAXONOMY = (
    '[facets.kind]\nquestion = "What kind of document is this? Judge by its form, not by the topic it discusses."\n'
    + "".join(f"values.{k} = {{ description = {json.dumps(d)} }}\n" for k, d in DESCRIPTIONS.items())
)
HAND_TEMPERATURE = 0.05  # what labels.py used before this measurement
GRID = np.round(np.concatenate([np.arange(0.005, 0.05, 0.0025), np.arange(0.05, 0.2, 0.005)]), 4)
THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

# the baseline: a keyword in the file name (or anywhere in the path), the commonest kind otherwise
KEYWORDS = [
    ("changelog", r"changelog|news"),
    ("licence", r"copyright|licen[cs]e|copying"),
    ("readme", r"readme"),
    ("faq", r"faq"),
    ("manpage", r"(^|/)man\d?/|\.\d[a-z]*(\.txt)?$"),
    ("guide", r"guide|reference|handbook|manual|html?$"),
]


def keyword_label(text: str, fallback: str = "guide") -> str:
    "The baseline's answer for a file name or path."
    t = text.lower()
    return next((k for k, pat in KEYWORDS if re.search(pat, t)), fallback)


def half(path: str) -> int:
    "0 (calibration) or 1 (test), by a hash of the path: the same split on every run."
    return hashlib.sha256(path.encode()).digest()[0] % 2


def similarities(corpus: Path, rows: list[dict], model_dir: Path, name_label: str = ""):
    "Each document's cosine similarity to each value's description, the value ids, and the opening texts read."
    from minirag.api import Index
    from minirag.ingest import FileItem, prepare
    from minirag.labels import OPENING_CHUNKS, parse_taxonomy, value_vectors

    ix = Index.open(corpus, model_name=str(model_dir), cache_dir=model_dir.parent)
    eng, tax = ix.engine, parse_taxonomy(TAXONOMY)
    ids, mat = value_vectors(tax, eng.embedder)["kind"]
    mat = mat / np.linalg.norm(mat, axis=1, keepdims=True)
    prompt = (getattr(eng.embedder, "prompts", None) or ("", ""))[1]
    cache = corpus / ".openings.json"  # converting and chunking the set takes minutes; the openings are kept
    texts = json.loads(cache.read_text()) if cache.exists() else {}
    sims = []
    for r in rows:
        if r["path"] not in texts:
            p = prepare(eng, FileItem(corpus / r["path"], corpus))
            texts[r["path"]] = [x["text"] for x in p.rows[:OPENING_CHUNKS]]
        extra = [f"{name_label}: {Path(r['path']).name}"] if name_label else []
        vecs = eng.embedder.embed([prompt + x for x in texts[r["path"]] + extra])
        v = np.asarray(vecs, np.float32).mean(axis=0)  # as labels.opening, the name's vector counted in
        sims.append(mat @ (v / np.linalg.norm(v)))
    cache.write_text(json.dumps(texts, ensure_ascii=False))
    return np.array(sims), ids


def softmax(sims: np.ndarray, t: float) -> np.ndarray:
    z = np.exp((sims - sims.max(axis=1, keepdims=True)) / t)
    return z / z.sum(axis=1, keepdims=True)


def nll(sims, gold, t) -> float:
    p = softmax(sims, t)[np.arange(len(gold)), gold]
    return float(-np.log(np.maximum(p, 1e-12)).mean())


def ece(sims, gold, t, bins: int = 10) -> float:
    "Expected calibration error: the gap between confidence and accuracy, averaged over confidence bins."
    p = softmax(sims, t)
    conf, right = p.max(axis=1), p.argmax(axis=1) == gold
    edges, out = np.linspace(0, 1, bins + 1), 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            out += m.mean() * abs(conf[m].mean() - right[m].mean())
    return float(out)


def curve(sims, gold, t) -> list[dict]:
    "Coverage and accuracy of the labels at or above each confidence threshold."
    p = softmax(sims, t)
    conf, right = p.max(axis=1), p.argmax(axis=1) == gold
    out = []
    for th in THRESHOLDS:
        m = conf >= th
        out.append(
            dict(
                threshold=th,
                coverage=round(float(m.mean()), 3),
                accuracy=round(float(right[m].mean()), 3) if m.any() else None,
            )
        )
    return out


def measure(corpus: Path, model_dir: Path) -> dict:
    rows = labelled_docs.read_manifest()
    sims, ids = similarities(corpus, rows, model_dir)
    gold = np.array([ids.index(r["label"]) for r in rows])
    test = np.array([half(r["path"]) for r in rows]) == 1
    cal = ~test
    losses = {float(t): nll(sims[cal], gold[cal], t) for t in GRID}
    best = min(losses, key=losses.get)
    pred = sims.argmax(axis=1)
    out = dict(documents=len(rows), calibration_half=int(cal.sum()), test_half=int(test.sum()), values=ids)
    out["temperature"] = dict(
        chosen=best,
        hand=HAND_TEMPERATURE,
        nll_test=dict(
            chosen=round(nll(sims[test], gold[test], best), 3),
            hand=round(nll(sims[test], gold[test], HAND_TEMPERATURE), 3),
        ),
        ece_test=dict(
            chosen=round(ece(sims[test], gold[test], best), 3),
            hand=round(ece(sims[test], gold[test], HAND_TEMPERATURE), 3),
        ),
    )
    by_lang = {}
    for lang in sorted({r["lang"] for r in rows}):
        m = np.array([r["lang"] == lang for r in rows])
        name = [keyword_label(Path(r["path"]).name) for r in rows]
        path = [keyword_label(r["path"]) for r in rows]
        by_lang[lang] = dict(
            documents=int(m.sum()),
            model=round(float((pred[m] == gold[m]).mean()), 3),
            name_keywords=round(float(np.mean([name[i] == rows[i]["label"] for i in np.flatnonzero(m)])), 3),
            path_keywords=round(float(np.mean([path[i] == rows[i]["label"] for i in np.flatnonzero(m)])), 3),
            model_test_half=round(float((pred[m & test] == gold[m & test]).mean()), 3),
            curve_test_half=curve(sims[m & test], gold[m & test], best),
        )
    out["by_language"] = by_lang
    out["curve_test_half"] = curve(sims[test], gold[test], best)
    out["curve_test_half_hand"] = curve(sims[test], gold[test], HAND_TEMPERATURE)
    conf = np.zeros((len(ids), len(ids)), int)
    for g, p in zip(gold, pred):
        conf[g, p] += 1
    named, _ = similarities(corpus, rows, model_dir, "File name")  # not what labels.py does: a what-if
    out["with_file_name_line"] = {
        lang: round(float((named.argmax(axis=1)[m] == gold[m]).mean()), 3)
        for lang in by_lang
        for m in [np.array([r["lang"] == lang for r in rows])]
    }
    out["confusion"] = {
        ids[i]: {ids[j]: int(conf[i, j]) for j in range(len(ids)) if conf[i, j]} for i in range(len(ids))
    }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "minirag-labelled", help="the set's documents"
    )
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "labels.json")
    ap.add_argument("--no-json", action="store_true", help="print only")
    a = ap.parse_args()
    from minirag.embed import packaged_model_dir

    if not a.dir.exists():
        labelled_docs.build(a.dir, labelled_docs.read_manifest())
    model = packaged_model_dir(Path(tempfile.gettempdir()) / "minirag-bench-model")
    res = dict(model="packaged all-MiniLM-L6-v2 (int8), English-only", **measure(a.dir, model))
    print(json.dumps(res, indent=1, ensure_ascii=False))
    if not a.no_json:
        a.json.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
