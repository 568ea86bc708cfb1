"""For every test under the repository: the on-disk cache (onemodel.cache) lives in a temporary
folder, never the user's, from before collection to the end of the run (subprocesses inherit
it). Tests that check the cache itself point it at their own folder."""
import os
import shutil
import tempfile

_VARS = ("ONEMODEL_CACHE_DIR", "XDG_CACHE_HOME")
_saved: dict = {}


def pytest_configure(config):
    folder = tempfile.mkdtemp(prefix="onemodel-test-cache-")
    _saved.update({k: os.environ.get(k) for k in _VARS}, folder=folder)
    for k in _VARS:
        os.environ[k] = folder


def pytest_unconfigure(config):
    folder = _saved.pop("folder", None)
    for k in _VARS:
        if k in _saved:
            value = _saved.pop(k)
            if value is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = value
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
