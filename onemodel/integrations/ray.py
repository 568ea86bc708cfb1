"""Batch inference on Ray Data (``pip install onemodel[ray]``, Ray 2.x).

`OneModelPredictor` is a callable class for ``Dataset.map_batches``: Ray makes one per actor, so
the model is loaded and its session made once per actor, and every batch (numpy dict or pandas
DataFrame, any size: the symbolic batch axis takes it) maps the graph's inputs, read from
columns, to output columns. `predict` adds it to a dataset; `batch_predict` is the whole
``read_*`` -> ``map_batches`` -> ``write_*`` pipeline. See docs/guide/scaling.md.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import OneModelError


class RayIntegrationError(OneModelError, ValueError):
    """A batch or an argument the Ray integration cannot use (names the column or argument)."""


def _require_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise OneModelError("onemodel.integrations.ray needs Ray Data: pip install "
                            "'onemodel[ray]'") from exc
    return ray


def _load_model(model: Any):
    """A TracedModel from a path, OneModel bytes, a Ray object reference to either, or a
    TracedModel / Graph."""
    from ..core.graph import Graph
    from ..formats import loads
    from ..loading import load
    from ..runtime.traced_model import TracedModel

    if type(model).__name__ == "ObjectRef":
        model = _require_ray().get(model)
    if isinstance(model, TracedModel):
        return model
    if isinstance(model, Graph):
        return TracedModel(model)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return TracedModel(loads(bytes(model)))
    if isinstance(model, (str, os.PathLike)):
        return load(model)
    raise RayIntegrationError(f"model must be a path, a OneModel file's bytes, a Ray object "
                              f"reference to them, or a TracedModel; got {type(model).__name__}")


def _as_array(name: str, column: Any) -> np.ndarray:
    """A batch column as one ndarray: pandas gives a Series (of arrays, for tensor columns)."""
    values = getattr(column, "to_numpy", None)
    arr = values() if values is not None else np.asarray(column)
    if arr.dtype == object and arr.size and isinstance(arr.flat[0], np.ndarray):
        try:
            arr = np.stack(list(arr))
        except ValueError as exc:
            raise RayIntegrationError(f"column {name!r}: its rows have different shapes "
                                      f"({exc})") from None
    return arr


class OneModelPredictor:
    """``ds.map_batches(OneModelPredictor, fn_constructor_kwargs={"model": ...}, concurrency=N)``.

    ``model``: a path, OneModel bytes, an object reference (``ray.put(dumps(traced))``) or a
    TracedModel. ``columns`` maps graph input names to the batch columns that feed them (default:
    the same names); ``outputs`` maps graph output names to the columns written (default: every
    output under its own name); ``keep`` lists batch columns copied through (an id, a label).
    ``threads`` (default 1: one actor per core is Ray's layout), ``backend`` and
    ``optimization`` go to the session, as do further keyword arguments."""

    def __init__(self, model: Any, *, columns: Mapping[str, str] | None = None,
                 outputs: Mapping[str, str] | None = None, keep: Sequence[str] = (),
                 threads: int | None = 1, backend: str = "auto", optimization: str = "all",
                 **session_options: Any) -> None:
        traced = _load_model(model)
        self.session = traced.create_session(backend=backend, optimization=optimization,
                                             threads=threads, **session_options)
        inputs = [v.name for v in self.session.inputs]
        self.columns = dict(columns or {})
        unknown = sorted(set(self.columns) - set(inputs))
        if unknown:
            raise RayIntegrationError(f"columns names {unknown[0]!r}, which is not an input of "
                                      f"the model; its inputs are {', '.join(map(repr, inputs))}")
        self.columns = {name: self.columns.get(name, name) for name in inputs}
        names = [v.name for v in self.session.outputs]
        self.outputs = dict(outputs) if outputs is not None else {n: n for n in names}
        unknown = sorted(set(self.outputs) - set(names))
        if unknown:
            raise RayIntegrationError(f"outputs names {unknown[0]!r}, which is not an output of "
                                      f"the model; its outputs are {', '.join(map(repr, names))}")
        self.keep = tuple(keep)

    def __call__(self, batch: Any) -> dict[str, np.ndarray]:
        available = list(batch.keys()) if hasattr(batch, "keys") else []
        if not available:
            raise RayIntegrationError(f"a batch must be a dict of columns or a pandas DataFrame, "
                                      f"got {type(batch).__name__}")
        feeds = {}
        for name, column in self.columns.items():
            if column not in available:
                raise RayIntegrationError(f"the batch has no column {column!r} for the model's "
                                          f"input {name!r}; its columns are "
                                          f"{', '.join(map(repr, available))}")
            feeds[name] = _as_array(column, batch[column])
        result = self.session.run(feeds, output_names=list(self.outputs))
        out = {self.outputs[name]: t.numpy() for name, t in result.items()}
        for column in self.keep:
            if column not in available:
                raise RayIntegrationError(f"keep names {column!r}, which is not a column of the "
                                          f"batch; its columns are "
                                          f"{', '.join(map(repr, available))}")
            out[column] = _as_array(column, batch[column])
        return out


def predict(dataset: Any, model: Any, *, actors: int = 1, batch_size: int | None = 256,
            **predictor_options: Any) -> Any:
    """``dataset.map_batches(OneModelPredictor, ...)`` over ``actors`` actors. A TracedModel is
    put into Ray's object store once (as its OneModel bytes) rather than shipped per actor."""
    ray = _require_ray()
    from ..formats import dumps
    from ..runtime.traced_model import TracedModel

    if isinstance(actors, bool) or not isinstance(actors, int) or actors < 1:
        raise RayIntegrationError(f"actors must be a positive int, got {actors!r}")
    if isinstance(model, TracedModel):
        model = ray.put(dumps(model.graph))
    return dataset.map_batches(OneModelPredictor, batch_size=batch_size, batch_format="numpy",
                               concurrency=actors,
                               fn_constructor_kwargs={"model": model, **predictor_options})


def batch_predict(source: Any, model: Any, destination: str, *, format: str = "parquet",
                  actors: int = 1, batch_size: int | None = 256,
                  **predictor_options: Any) -> None:
    """The common pipeline: ``ray.data.read_<format>(source)``, `predict`, then
    ``write_<format>(destination)`` (parquet, csv, json, numpy ... as Ray Data names them)."""
    ray = _require_ray()
    reader = getattr(ray.data, f"read_{format}", None)
    if reader is None:
        raise RayIntegrationError(f"Ray Data has no reader read_{format}; name a format it "
                                  f"reads, such as parquet, csv or json")
    dataset = predict(reader(source), model, actors=actors, batch_size=batch_size,
                      **predictor_options)
    writer = getattr(dataset, f"write_{format}", None)
    if writer is None:
        raise RayIntegrationError(f"Ray Data has no writer write_{format}")
    writer(destination)


__all__ = ["OneModelPredictor", "RayIntegrationError", "predict", "batch_predict"]
