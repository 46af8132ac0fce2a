"Shared fixtures: the packaged real model, temp roots and indexes."
import os
from pathlib import Path
import pytest

@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    "The packaged all-MiniLM-L6-v2 int8 model assembled in a temp cache (the local-directory path of R-M1)."
    from minirag.embed import packaged_model_dir
    cache = Path(os.environ.get("MINIRAG_TEST_MODEL_CACHE", tmp_path_factory.mktemp("models")))
    return packaged_model_dir(cache)

@pytest.fixture(scope="session")
def shared_embedder(model_dir):
    "One loaded embedder for the whole session (loading takes ~1 s)."
    from minirag.embed import Embedder
    return Embedder(str(model_dir), model_dir.parent)

@pytest.fixture
def root(tmp_path):
    r = tmp_path/"docs"; r.mkdir()
    return Path(os.path.realpath(r))

@pytest.fixture
def index(root, model_dir, shared_embedder):
    "An Index over `root` using the real packaged model."
    from minirag.api import Index
    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder)
    yield ix
    ix.close()

def write(root: Path, name: str, text: str) -> Path:
    p = root/name; p.parent.mkdir(parents=True, exist_ok=True); p.write_text(text, encoding="utf-8"); return p
