"""Entry point of onemodel-backend-threaded: the "threaded" backend.

It registers no kernels of its own: a session compiled on it uses the kernels registered for the
"numpy" backend (looked up in the registry, so this package imports no other plugin), and any
registered for "threaded" in their place.
"""
from __future__ import annotations

from onemodel.registry import BackendDef, hookimpl

from .backend import create


@hookimpl
def onemodel_backends():
    return (BackendDef(name="threaded", create=create,
                       doc="The numpy backend's plans run on a thread pool: independent "
                           "branches at once, large nodes split along the batch axis, BLAS "
                           "capped to one thread; sequential where that does not pay. threads "
                           "defaults to every core (the caller and threads-1 workers)."),)
