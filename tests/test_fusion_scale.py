"The adaptive fusion reads each model's cosine distances in that model's own unit (search.distance_scale)."

import os
from pathlib import Path
import numpy as np
import pytest
from conftest import write
from minirag import api, search
from minirag.api import Index, ingest_paths
from minirag.search import distance_scale, match_gap, fuse_lists, informativeness, PACKAGED_MATCH_GAP
from minirag.wire import to_wire
from test_search import DOCS


class Squeezed:
    "A model whose vectors share a component of weight `pull`: the same order of texts, distances compressed."

    def __init__(self, base, pull):
        self.base, self.pull, self.model_id = base, pull, f"squeezed-{pull}"

    def _squeeze(self, v):
        v = v + self.pull * np.ones(v.shape[1], np.float32) / np.sqrt(v.shape[1])
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed(self, texts):
        return self._squeeze(self.base.embed(texts))

    def embed_queries(self, texts):
        return self._squeeze(self.base.embed_queries(texts))


def test_the_packaged_model_reads_distances_in_its_own_unit(shared_embedder):
    assert match_gap(shared_embedder) == pytest.approx(PACKAGED_MATCH_GAP, abs=0.005)
    assert distance_scale(shared_embedder) == 1.0  # its rankings are exactly those the constants were tuned on


def test_a_model_with_compressed_distances_gets_a_smaller_unit(shared_embedder):
    scales = [distance_scale(Squeezed(shared_embedder, p)) for p in (0.5, 1.0, 2.0)]
    assert 0.05 <= scales[2] < scales[1] < scales[0] < 1.0, scales


def test_a_tight_but_sure_vector_side_keeps_its_weight():
    tight = [(i, 0.10 + i * 0.003) for i in range(30)]  # e5's median spread, 1st to 10th
    kw = [(9, 9.0)] + [(i, 7.0) for i in range(10, 30)]
    assert informativeness(tight, kw)[0] < 0.5 and informativeness(tight, kw, scale=0.16)[0] == 1.0
    assert fuse_lists(tight, kw, 0.6, "adaptive", 100)[0].chunk_id == 9
    assert fuse_lists(tight, kw, 0.6, "adaptive", 100, scale=0.16)[0].chunk_id == 0
    assert [h.chunk_id for h in fuse_lists(tight, kw, 0.6, "rrf", 100, scale=0.16)] == [
        h.chunk_id for h in fuse_lists(tight, kw, 0.6, "rrf", 100)
    ]  # the exact RRF has no distances to read


@pytest.fixture(scope="module")
def built(tmp_path_factory, model_dir, shared_embedder):
    root = Path(os.path.realpath(tmp_path_factory.mktemp("docs")))
    for n, t in DOCS.items():
        write(root, n, t)
    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder)
    assert to_wire(ingest_paths(ix, [root]))["failed"] == 0
    yield ix
    ix.close()


def test_a_query_fuses_in_the_configured_models_unit(built, monkeypatch):
    seen = []
    monkeypatch.setattr(api, "distance_scale", lambda emb: seen.append(emb) or search.SCALE_RANGE[0])
    q = "ERR_CONNECTION_REFUSED"  # one document holds the identifier; the vector side ranks another first
    tight = built.query(q, top_k=5)
    assert seen == [built.engine.embedder]
    vector_only = built.query(q, top_k=5, weight=0.0)
    assert len(seen) == 1  # no keyword side: nothing to weigh the distances against
    where = lambda r: [(Path(h.source).name, h.chunk_index) for h in r.hits][:3]
    # read in a unit 20 times smaller, every distance gap looks decisive: hybrid keeps the vector order
    assert where(tight) == where(vector_only) and where(tight)[0][0] != "errors-catalog.md"
    monkeypatch.setattr(api, "distance_scale", lambda emb: 1.0)  # the packaged model's own unit
    assert where(built.query(q, top_k=5))[0][0] == "errors-catalog.md"


@pytest.mark.parametrize("saved", ["{not json", '{"KEY": "wide"}', '{"KEY": 99.0}', '{"KEY": true}', "[1.0]"])
def test_the_scale_is_measured_once_per_model_and_a_bad_entry_again(model_dir, tmp_path, monkeypatch, saved):
    from minirag.embed import Embedder

    monkeypatch.setattr(search, "_scales", {})  # a fresh process
    first = Embedder(str(model_dir), tmp_path)
    assert distance_scale(first) == 1.0 and first.calls == 2 * len(search.REFERENCE_PAIRS)
    path = tmp_path / search.SCALES_FILE
    key = search.scale_key(first.model_id)
    assert search.saved_scales(path) == {key: 1.0}
    monkeypatch.setattr(search, "_scales", {})  # the next process of this model reads the file
    later = Embedder(str(model_dir), tmp_path)
    assert distance_scale(later) == 1.0 and later.calls == 0
    squeezed = Squeezed(later, 2.0)
    squeezed.cache_dir = tmp_path  # another identity: its own entry, measured, beside the first
    assert distance_scale(squeezed) < 0.5 and later.calls == 2 * len(search.REFERENCE_PAIRS)
    assert set(search.saved_scales(path)) == {key, search.scale_key("squeezed-2.0")}
    path.write_text(saved.replace("KEY", key))  # damaged, or foreign to this key: measured again and saved
    monkeypatch.setattr(search, "_scales", {})
    again = Embedder(str(model_dir), tmp_path)
    assert distance_scale(again) == 1.0 and again.calls == 2 * len(search.REFERENCE_PAIRS)
    assert search.saved_scales(path)[key] == 1.0
