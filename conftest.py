"""For every test under the repository: the on-disk cache (onemodel.cache) lives in a
temporary folder, never the user's. Tests that check the cache itself point it at their own."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("onemodel-cache"))
    saved = {k: os.environ.get(k) for k in ("ONEMODEL_CACHE_DIR", "XDG_CACHE_HOME")}
    os.environ["ONEMODEL_CACHE_DIR"] = folder
    os.environ["XDG_CACHE_HOME"] = folder
    yield folder
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
