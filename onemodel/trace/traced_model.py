"""`TracedModel`: a recorded graph with ways to run, inspect, save and export it."""
from __future__ import annotations

import os

import numpy as np

from ..core import layers
from ..core.graph import Graph
from ..core.tensor import Tensor
from ..errors import OneModelError


class TracedModel:
    """What a trace (or a loader) returns: ``graph``, its input and output names, ``__call__``,
    ``save``, ``save_onnx`` and ``create_session``."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._session = None

    @property
    def input_names(self) -> list[str]:
        return self.graph.input_names

    @property
    def output_names(self) -> list[str]:
        return self.graph.output_names

    def __call__(self, *tensors):
        """Run the graph (on a session with ``backend="auto"``, made at the first call); a
        Tensor, or a tuple for several outputs."""
        names = self.input_names
        if len(tensors) != len(names):
            raise OneModelError(f"this model takes {len(names)} inputs ({', '.join(names)}), "
                                f"got {len(tensors)}")
        feeds = {n: t for n, t in zip(names, tensors)}
        outputs = self._run(feeds)
        result = tuple(outputs[n] for n in self.output_names)
        return result[0] if len(result) == 1 else result

    def _run(self, feeds):
        try:
            from ..core.session import Session
        except ImportError:  # sessions not available: the reference interpreter
            from ..core.interpreter import run_graph

            arrays = {n: (t._data if isinstance(t, Tensor) else np.asarray(t))
                      for n, t in feeds.items()}
            return {k: Tensor._wrap(v) for k, v in run_graph(self.graph, arrays).items()}
        if self._session is None:
            self._session = Session(self, optimization="all")
        return self._session.run(feeds)

    def create_session(self, backend: str = "auto", optimization: str = "all",
                       threads: int | None = None, **options):
        """A `Session` over this graph; ``backend="auto"`` takes the fastest installed backend
        that runs it; ``threads`` bounds the cores one run may use (BLAS included; None: the
        backend's default)."""
        from ..core.session import Session

        return Session(self, backend=backend, optimization=optimization, threads=threads,
                       **options)

    def save(self, path: str | os.PathLike) -> None:
        """Save in the OneModel format (one file; see docs/format.md)."""
        layers.service("save")(self.graph, path)  # the formats layer, above this one

    def save_onnx(self, path: str | os.PathLike, opset: int | None = None) -> None:
        """Export to ONNX; symbolic axes become named dim_params."""
        layers.service("save_onnx")(self.graph, path, opset=opset)

    def __reduce__(self):
        """Pickle as the graph's OneModel bytes: unpickling loads them by `om.load`'s safe path
        (no code from the payload), so a traced model travels to worker processes."""
        return (_traced_from_bytes, (layers.service("dumps")(self.graph),))

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> "TracedModel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        ins = ", ".join(str(v) for v in self.graph.inputs)
        return f"<TracedModel ({ins}) -> {', '.join(self.output_names)}: {len(self.graph.nodes)} nodes>"


def _traced_from_bytes(data: bytes) -> TracedModel:
    """Unpickling: the TracedModel whose OneModel bytes are ``data``."""
    if not isinstance(data, bytes):
        raise OneModelError(f"a pickled TracedModel must hold the model's bytes, got "
                            f"{type(data).__name__}")
    return TracedModel(layers.service("loads")(data))
