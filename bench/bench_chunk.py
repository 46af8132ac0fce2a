"""Chunker timings and peak memory on pathological inputs, which must stay bounded. Run: `python bench/bench_chunk.py`.

Prints wall time, peak Python memory (tracemalloc) and the characters handed to the tokenizer relative to the
input size (a quadratic re-tokenisation would show up as a ratio growing with the input).
"""

import time, tracemalloc
from pathlib import Path
from minirag.chunk import chunk_markdown

TOKENIZER = Path(__file__).parents[1] / "minirag" / "assets" / "all-MiniLM-L6-v2" / "tokenizer.json"


def make_count():
    try:
        from minirag.tokens import TokenCounter

        return TokenCounter(TOKENIZER).count
    except ImportError:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(TOKENIZER))
        tok.no_truncation()
        tok.no_padding()
        return lambda s: len(tok.encode(s, add_special_tokens=False).ids)


def table(rows):
    return "| SKU | Description | Zone | Qty |\n| --- | --- | --- | --- |\n" + "".join(
        f"| SKU-{i} | pallet wrap batch {i} | Z{i % 9} | {i * 7 % 900} |\n" for i in range(rows)
    )


CASES = {
    "20 KB line, no spaces": lambda: "x" * 20_000,
    "1 MB paragraph (sentences)": lambda: " ".join(
        f"Sentence {i} about pallets, zones and stock." for i in range(23_000)
    )[:1_000_000],
    "1 MB paragraph (no punctuation)": lambda: " ".join(f"word{i}" for i in range(120_000))[:1_000_000],
    "10k-row table": lambda: "# Stock\n\n## Items\n\n" + table(10_000),
    "100k-row table (~5 MB)": lambda: "# Stock\n\n## Items\n\n" + table(100_000),
}


def main():
    base = make_count()
    print(
        f"{'case':34} {'input':>10} {'chunks':>7} {'max tok':>7} {'seconds':>8} {'peak MB':>8} {'tokenized/input':>15}"
    )
    for name, make in CASES.items():
        md = make()
        seen = [0]

        def count(s):
            seen[0] += len(s)
            return base(s)

        tracemalloc.start()
        t0 = time.perf_counter()
        doc = chunk_markdown(md, count, 110)
        dt = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        mx = max(c.tokens for c in doc.chunks)
        print(
            f"{name:34} {len(md):>10,} {len(doc.chunks):>7,} {mx:>7} {dt:>8.2f} {peak:>8.1f} {seen[0] / len(md):>15.2f}"
        )


if __name__ == "__main__":
    main()
