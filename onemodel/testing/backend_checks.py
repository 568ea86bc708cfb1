"""`check_backend`: a backend against the reference interpreter (the ops' numpy kernels) on a
standard set of traced models and, optionally, on every installed op's samples.

The models are built from ``om.nn`` layers and Tensor methods found in the registry at run time;
a model whose layers no installed plugin provides is skipped with the reason.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable

import numpy as np

from ..core.interpreter import run_graph
from ..runtime.session import Session, backends as installed_backends
from ..core.tensor import Tensor
from ..errors import OneModelError
from ..registry.manager import REGISTRY
from . import op_checks
from .report import Check, CheckReport, OpCheckError

LEVELS = ("none", "basic", "all")


def _layers(*names: str):
    """The ``om.nn`` layer classes, or the reason they are unavailable."""
    modules = REGISTRY.tables().modules
    missing = [n for n in names if n not in modules]
    if missing:
        return f"no installed plugin provides om.nn.{', om.nn.'.join(missing)}"
    return [modules[n].cls for n in names]


def _mlp():
    layers = _layers("Sequential", "Linear", "ReLU")
    if isinstance(layers, str):
        return layers
    seq, linear, relu = layers
    return seq(linear(8, 16), relu(), linear(16, 4)), (3, 8), ("batch", None)


def _cnn():
    layers = _layers("Sequential", "Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Flatten",
                     "Linear")
    if isinstance(layers, str):
        return layers
    seq, conv, bn, relu, pool, flatten, linear = layers
    return (seq(conv(2, 4, 3, padding=1), bn(4), relu(), pool(2), flatten(), linear(36, 5)),
            (3, 2, 6, 6), ("batch", None, None, None))


def _transformer():
    layers = _layers("TransformerEncoderLayer")
    if isinstance(layers, str):
        return layers
    (enc,) = layers
    return (enc(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True), (3, 5, 16),
            ("batch", "seq", None))


def _pointwise(x):
    """A chain of pointwise Tensor operators and methods, for the fusions."""
    return ((x * 0.5 + 1.0).relu() - x.tanh() * x.sigmoid()).exp() / 3.0


def _elementwise():
    return _pointwise, (3, 7), ("batch", None)


#: name -> builder returning ``(module_or_function, example_shape, axis_names)`` or the reason
#: the model cannot be built here
MODELS: dict[str, Callable] = {"mlp": _mlp, "cnn": _cnn, "transformer": _transformer,
                               "elementwise": _elementwise}


def _trace(fn, shape, axes):
    from ..trace.api import trace

    rng = np.random.default_rng(0)
    example = Tensor.from_numpy(rng.standard_normal(shape).astype(np.float32))
    if hasattr(fn, "eval"):
        fn.eval()
        return fn.trace(example, *axes)
    return trace(fn, example, *axes)


def check_model(backend: str, name: str, levels: Iterable[str] = LEVELS, *,
                batches: Iterable[int] = (1, 4), rtol: float = 1e-4,
                atol: float = 1e-5) -> Check:
    """One standard model, traced with a symbolic batch, in a Session on ``backend`` at each
    level and batch size (and from two threads at once) against the reference interpreter."""
    from ..core.random import manual_seed

    subject = f"{backend} {name}"
    manual_seed(0)  # the same parameters on every run
    built = MODELS[name]()
    if isinstance(built, str):
        return Check("model", subject, built)
    fn, shape, axes = built
    traced = _trace(fn, shape, axes)
    rng = np.random.default_rng(1)
    feeds = [{traced.input_names[0]: rng.standard_normal((b, *shape[1:])).astype(np.float32)}
             for b in batches]
    wants = [run_graph(traced.graph, f) for f in feeds]
    for level in levels:
        with Session(traced, backend=backend, optimization=level) as session:
            for f, want in zip(feeds, wants):
                _compare(session.run(f), want, f"{subject} at {level}, batch "
                         f"{next(iter(f.values())).shape[0]}", rtol, atol)
            errors: list[BaseException] = []

            def worker(f=feeds[-1], want=wants[-1], level=level, errors=errors):
                try:
                    for _ in range(3):
                        _compare(session.run(f), want, f"{subject} at {level} from two threads",
                                 rtol, atol)
                except BaseException as exc:  # noqa: BLE001 - reported on the main thread
                    errors.append(exc)

            threads = [threading.Thread(target=worker) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
    return Check("model", subject)


def _compare(got, want: dict, where: str, rtol: float, atol: float) -> None:
    for key, w in want.items():
        g = got[key].numpy()
        if g.dtype != w.dtype:
            raise OpCheckError(f"model {where}: output {key!r} is {g.dtype}, the reference "
                               f"interpreter gives {w.dtype}")
        op_checks.assert_close("model", f"{where}, output {key!r}", g, w, rtol, atol)


def check_backend(name: str, *, models: Iterable[str] | None = None,
                  ops: bool | Iterable[str] = True, levels: Iterable[str] = LEVELS,
                  seed: int = 0) -> CheckReport:
    """Run the standard models (`MODELS`, or those named) and, when ``ops`` is true (or names
    ops), every sample of every installed op on backend ``name``, each against the reference
    interpreter. Raises `OpCheckError` listing every failure; returns the `CheckReport`."""
    if name not in installed_backends():
        raise OneModelError(f"check_backend: unknown backend {name!r}; installed backends: "
                            f"{', '.join(installed_backends()) or 'none'}")
    levels = tuple(levels)
    names = list(MODELS) if models is None else list(models)
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        raise OneModelError(f"check_backend: unknown model(s) {unknown}; the standard models are "
                            f"{', '.join(MODELS)}")
    results: list[Check] = []
    failures: list[str] = []

    def run(fn, *args) -> None:
        try:
            results.append(fn(*args))
        except OpCheckError as exc:
            failures.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - every failure is listed, not the first only
            failures.append(f"{fn.__name__} {args[:2]}: {type(exc).__name__}: {exc}")

    for model in names:
        run(check_model, name, model, levels)
    if ops:
        table = REGISTRY.tables().ops
        op_names = sorted(table) if ops is True else list(ops)
        for op_name in op_names:
            op = table[op_name]
            for sample in op.samples(np.random.default_rng(seed)):
                run(op_checks.check_sessions, op, sample, [name], levels)
    if failures:
        raise OpCheckError(f"check_backend({name!r}): {len(failures)} check(s) failed:\n  "
                           + "\n  ".join(f.replace("\n", "\n    ") for f in failures),
                           tuple(failures))
    return CheckReport(tuple(results))
