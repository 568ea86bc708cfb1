"""OneModel's threaded backend: the numpy backend's plans run in parallel on a thread pool.

See docs/guide/backends.md. ``om.Session(model, backend="threaded", threads=4)``.
"""
