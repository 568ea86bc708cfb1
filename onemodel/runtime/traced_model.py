"""`TracedModel`: a recorded graph with ways to run, inspect, save and export it."""
from __future__ import annotations

import os

from ..core.graph import Graph
from ..errors import OneModelError
from ..formats import dumps, loads, save_graph, save_onnx as write_onnx
from .session import Session


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
        if self._session is None:
            self._session = Session(self, optimization="all")
        return self._session.run(feeds)

    def create_session(self, backend: str = "auto", optimization: str = "all",
                       threads: int | None = None, **options):
        """A `Session` over this graph; ``backend="auto"`` takes the fastest installed backend
        that runs it; ``threads`` bounds the cores one run may use (BLAS included; None: the
        backend's default)."""
        return Session(self, backend=backend, optimization=optimization, threads=threads,
                       **options)

    def save(self, path: str | os.PathLike) -> None:
        """Save in the OneModel format (one file; see docs/format.md)."""
        save_graph(self.graph, path)

    def save_onnx(self, path: str | os.PathLike, opset: int | None = None) -> None:
        """Export to ONNX; symbolic axes become named dim_params."""
        write_onnx(self.graph, path, opset=opset)

    def __reduce__(self):
        """Pickle as the graph's OneModel bytes: unpickling loads them by `om.load`'s safe path
        (no code from the payload), so a traced model travels to worker processes."""
        return (_traced_from_bytes, (dumps(self.graph),))

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
    return TracedModel(loads(data))
