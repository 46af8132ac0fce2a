"""A local model runs on ONNX Runtime directly (`embed.OnnxModel`), not through fastembed: the vectors must stay
fastembed's.

An index built before the change holds fastembed's vectors, and a query embedded the new way is compared against them;
any drift in the tokenizer set-up (truncation, special tokens, padding) or the pooling would shift every distance.
"""

import json, os, re, subprocess, sys
from pathlib import Path

import numpy as np

from conftest import write

DATA = Path(__file__).parent / "data"


def real_texts() -> list[str]:
    "Paragraphs of the fidelity sample (Russian, Italian, English text and HTML), plus the awkward cases."
    out = []
    for p in sorted((DATA / "fidelity").iterdir()):
        if p.suffix not in (".txt", ".html", ".md", ".csv"):
            continue
        words = re.sub(r"<[^>]+>", " ", p.read_text(encoding="utf-8", errors="replace")).split()
        i = 0
        for n in (5, 20, 60, 150) * 4:  # short and long pieces, so batches pad to different lengths
            if i + n > len(words):
                break
            out.append(" ".join(words[i : i + n]))
            i += n
    long = " ".join(out)[:6000]  # past the model's 512-token context: cut, not failed
    return out + [
        long,
        "",
        " ",
        "a",
        "日本語のテキスト",
        "def f(x):\n    return x ** 2  # code",
        "€ ✓ \u200b zero-width",
    ]


def test_local_model_vectors_are_fastembeds_bit_for_bit(model_dir):
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType
    from minirag.embed import Embedder, OnnxModel, local_model_info

    info = local_model_info(model_dir)
    TextEmbedding.add_custom_model(
        model="test/equality",
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf="test/equality"),
        dim=info["dim"],
        model_file=info["model_file"],
    )
    fe = TextEmbedding("test/equality", specific_model_path=str(model_dir), threads=2)
    ours = OnnxModel(Path(model_dir), info["model_file"], 2)
    texts = real_texts()
    assert len(texts) > 45 and any(re.search("[а-я]", t) for t in texts)
    for i in range(0, len(texts), 16):  # the same batches (padding depends on the batch) through both
        batch = texts[i : i + 16]
        a, b = ours.embed(batch), np.stack(list(fe.embed(batch, batch_size=len(batch))))
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        assert np.array_equal(a, b), (i, float(np.abs(a - b).max()))
    # the tokenizers agree token for token, truncation and padding included
    enc_a = [e.ids for e in ours.tokenizer.encode_batch(texts[:20] + [texts[-7]])]
    enc_b = [e.ids for e in fe.model.tokenizer.encode_batch(texts[:20] + [texts[-7]])]
    assert enc_a == enc_b and len(enc_a[-1]) == 512
    # and the Embedder (length-sorted batches) gives every text the vector it gets alone, to float tolerance
    e = Embedder(str(model_dir), model_dir.parent, threads=2)
    whole = e.embed(texts)
    alone = np.stack([np.stack(list(fe.embed([t], batch_size=1)))[0] for t in texts])
    assert np.abs(whole - alone).max() < 1e-5


def test_a_query_with_a_local_model_never_imports_fastembed(root, model_dir, tmp_path):
    """fastembed's import (hub client, image modules) cost 0.2–0.3 s of every one-shot command; portalocker's 30 ms
    (POSIX locks are flock, taken directly)."""
    write(root, "refunds.md", "# Refunds\n\nAn overpayment is refunded within 10 days.\n")
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env.update(
        BASE_DIR=str(root), MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent), DB_PATH=str(tmp_path / "idx")
    )
    code = (
        "import sys; from minirag.cli import run; c = run(sys.argv[1:]); "
        "print(json.dumps(sorted(m for m in ('fastembed', 'huggingface_hub', 'loguru', 'portalocker') "
        "if m in sys.modules)), file=sys.stderr); sys.exit(c)"
    )
    for args in (["sync", "--json"], ["query", "overpayment refund", "--top-k", "1", "--json"]):
        p = subprocess.run(
            [sys.executable, "-c", "import json; " + code, *args], capture_output=True, text=True, env=env, timeout=300
        )
        assert p.returncode == 0, p.stderr[-2000:]
        assert json.loads(p.stderr.strip().splitlines()[-1]) == [], (args, p.stderr[-500:])
    assert json.loads(p.stdout)["results"][0]["source"].endswith("refunds.md")


def test_a_query_that_ends_before_the_model_has_loaded_exits_cleanly(root, model_dir, tmp_path):
    """The CLI starts loading the model in a thread; a query on an empty index ends first. ONNX Runtime aborted the
    process (exit -6, 'terminate called without an active exception') when the interpreter was torn down under a session
    being built."""
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env.update(
        BASE_DIR=str(root),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        DB_PATH=str(tmp_path / "never-written"),
    )
    for _ in range(3):
        p = subprocess.run(
            [sys.executable, "-m", "minirag.cli", "query", "lighthouse keeper", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert (p.returncode, json.loads(p.stdout)["results"]) == (0, []), p.stderr[-1000:]
        assert "terminate" not in p.stderr and "Exception during initialization" not in p.stderr, p.stderr[-1000:]


def test_a_model_files_digest_is_kept_until_the_file_changes(model_dir, tmp_path, monkeypatch):
    import shutil
    from minirag import embed

    d = tmp_path / "model"
    shutil.copytree(model_dir, d)
    cache = tmp_path / "cache"
    first = embed.Embedder(str(d), cache).model_id
    book = json.loads((cache / embed.DIGESTS_FILE).read_text())
    assert list(book) == [str(d / "model.onnx")] and first.endswith(book[str(d / "model.onnx")]["sha256"][:12])

    def no_hashing(*a):
        raise AssertionError("hashed again")

    monkeypatch.setattr(embed, "file_hash", no_hashing)
    assert embed.Embedder(str(d), cache).model_id == first  # read back: the file is untouched
    monkeypatch.undo()
    with open(d / "model.onnx", "ab") as f:  # the weights rewritten: a new digest, never the kept one
        f.write(b"\0")
    assert embed.Embedder(str(d), cache).model_id != first
    (cache / embed.DIGESTS_FILE).write_text('{"' + str(d / "model.onnx") + '": {"stat": "x", "sha256": 1}}')
    again = embed.Embedder(str(d), cache).model_id  # a damaged or foreign record: hashed again
    assert again != first and json.loads((cache / embed.DIGESTS_FILE).read_text())[str(d / "model.onnx")]["stat"] != "x"
