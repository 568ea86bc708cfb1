"""`Session`: a graph optimised by the pass pipeline and compiled by a backend, run on feeds.

::

    session = om.Session(traced, optimization="all")  # backend="auto": the fastest installed
    outputs = session.run({"input": x})          # a read-only mapping of name -> Tensor

Feeds are checked before anything runs (names, dtypes, ranks, fixed sizes, one size per symbolic
axis), so a wrong feed is a `SessionError` naming the input and the axis, never a numpy error
from the middle of the graph.
"""
from __future__ import annotations

import errno
import os
import threading
from collections.abc import Mapping
from typing import Any, Iterable, Iterator, Sequence

import attrs
import numpy as np

from ..core import guards
from ..core.backend_choice import AUTO, BackendChoice, choose_backend
from ..core.dtype import DType
from ..core.graph import Graph, as_graph
from ..core.symbolic import Dim, SymbolicError, evaluate
from ..core.tensor import Tensor
from ..core.threads import bounded, check_threads
from ..errors import OneModelError, SessionError
from ..formats import dumps, load, loads
from ..passes import LEVELS, optimize
from ..registry import REGISTRY


def _shape_entry(d) -> int | str:
    return str(d) if isinstance(d, Dim) else int(d)


def _shape_tuple(entries: Iterable[int | str]) -> tuple:
    return tuple(entries)


@attrs.frozen
class ValueInfo:
    """A session input or output: ``name``, ``dtype`` (a `DType`) and ``shape`` (ints, and strs
    for symbolic axes such as ``("batch", 2)``)."""

    name: str
    dtype: DType
    shape: tuple = attrs.field(converter=_shape_tuple)

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{','.join(map(str, self.shape))}]"


class SessionOutputs(Mapping):
    """The result of `Session.run`: a read-only mapping of output name to `Tensor`, in the
    graph's output order. Each Tensor owns its memory (no two share a buffer)."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Tensor]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"no output {name!r} in these results; they hold "
                           f"{', '.join(map(repr, self._values)) or 'nothing'}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v.dtype}{list(v.shape)}" for k, v in self._values.items())
        return f"SessionOutputs({{{inner}}})"

    def close(self) -> None:
        """Drop the references to the output tensors."""
        self._values = {}

    def __enter__(self) -> "SessionOutputs":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def backends() -> list[str]:
    """Names of the installed backends."""
    return sorted(REGISTRY.tables().backends)


def _resolve_graph(model: Any) -> Graph:
    if isinstance(model, Graph):
        return model
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, "no model file", path)
        return load(path)
    return as_graph(model, "Session (or a model file path)")


#: feed signatures whose checked sizes a session remembers (cleared when full)
_FEED_CACHE = 64


class Session:
    """A graph ready to run: optimised at ``optimization`` and compiled by ``backend``.

    ``om.Session(traced_or_path, backend="auto", optimization="all", threads=None,
    **backend_options)``; ``backend="auto"`` takes the fastest installed backend that runs the
    graph (`backend_choice`), chosen once here; ``disabled=`` names passes to skip.
    ``threads`` is the most threads (cores) one run may use, BLAS included; None takes the
    backend's documented default (``session.threads`` says what it is). ``run`` may be called
    from several threads at once.
    """

    def __init__(self, model: Any, backend: str = AUTO, optimization: str = "all",
                 threads: int | None = None, *, disabled: Sequence[str] = (),
                 **backend_options: Any) -> None:
        threads = check_threads(threads)
        graph = _resolve_graph(model)
        table = REGISTRY.tables().backends
        #: how ``backend="auto"`` chose (None when the backend was named)
        self.backend_choice: BackendChoice | None = None
        if backend == AUTO:
            self.backend_choice = choose_backend(graph, table)
            backend = self.backend_choice.chosen
        clash = REGISTRY.tables().clash("backends", backend)
        if clash is not None:
            raise OneModelError(f"backend {backend!r} is unavailable: {clash}")
        if backend not in table:
            raise OneModelError(f"unknown backend {backend!r}; installed backends: "
                                f"{', '.join(sorted(table)) or 'none'}")
        if optimization not in LEVELS:
            raise OneModelError(f"unknown optimization level {optimization!r}; the levels are "
                                f"{', '.join(map(repr, LEVELS))}")
        self.graph = graph
        self.backend = backend
        self.optimization = optimization
        self.optimized_graph = optimize(graph, optimization, disabled=disabled)
        # what a pickled session needs to be made again (see `__reduce__`)
        self._remake = (optimization, threads, tuple(disabled), dict(backend_options))
        bdef = table[backend]
        try:
            impl = bdef.create(threads=threads, **backend_options)
        except OneModelError:
            raise
        except TypeError as exc:
            raise OneModelError(f"backend {backend!r} ({bdef.provider}) rejected the options "
                                f"{sorted(backend_options)}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - a broken backend plugin, named
            raise OneModelError(f"backend {backend!r} (plugin {bdef.provider}) failed to start: "
                                f"{type(exc).__name__}: {exc}") from exc
        try:
            self._compiled = impl.compile(self.optimized_graph)
        except OneModelError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise OneModelError(f"backend {backend!r} (plugin {bdef.provider}) failed to compile "
                                f"the graph: {type(exc).__name__}: {exc}") from exc
        # A backend says how many threads its runs use (``impl.threads``) and keeps to it; for
        # one that says nothing, the session bounds BLAS itself (to ``threads``, default 1).
        declared = getattr(impl, "threads", None)
        self.threads = int(declared) if declared is not None else (threads or 1)
        self._blas = None if declared is not None else self.threads
        self._closed = False
        self._lock = threading.Lock()
        g = self.optimized_graph
        self.inputs = [ValueInfo(v.name, v.dtype, tuple(_shape_entry(d) for d in v.shape))
                       for v in g.inputs]
        self.outputs = [ValueInfo(o, g.values[v].dtype,
                                  tuple(_shape_entry(d) for d in g.values[v].shape))
                        for o, v in g.outputs]
        self._input_values = list(g.inputs)
        self._guards = guards.merge(graph.guards, g.guards)  # a pass may drop them: keep the traced
        self._feed_envs: dict = {}  # feed signature -> sizes of the symbolic axes
        self._output_set = frozenset(g.output_names)
        self._all_outputs = tuple(g.output_names)

    # -- feeds ---------------------------------------------------------------------------------
    def _check_feeds(self, feeds: Mapping) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        known = self._feed_signature(feeds)
        if known is not None:
            env = self._feed_envs.get(known[0])
            if env is not None:  # these dtypes and shapes passed every check before
                return known[1], dict(env)
        arrays, env = self._check_feeds_fully(feeds)
        if known is not None:
            if len(self._feed_envs) >= _FEED_CACHE:
                self._feed_envs.clear()
            self._feed_envs[known[0]] = dict(env)
        return arrays, env

    def _feed_signature(self, feeds) -> tuple[tuple, dict[str, np.ndarray]] | None:
        """``(dtypes and shapes of the inputs in order, arrays)`` for a plain dict feeding every
        input an ndarray or Tensor and nothing else, else None (then every check runs). The
        checks depend only on this signature, so its environment is cached: rebuilding the
        symbolic sizes cost 4-20 us a run, a tenth of a small model's latency."""
        if type(feeds) is not dict or len(feeds) != len(self._input_values):
            return None
        arrays: dict[str, np.ndarray] = {}
        sig: list = []
        for v in self._input_values:
            x: Any = feeds.get(v.name)
            cls = type(x)
            if cls is np.ndarray:
                arr = x
            elif cls is Tensor:
                arr = x._data
                if type(arr) is not np.ndarray:
                    return None
            else:
                return None
            arrays[v.name] = arr
            sig.append(arr.dtype)
            sig.append(arr.shape)
        return tuple(sig), arrays

    def _check_feeds_fully(self, feeds: Mapping) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        if not isinstance(feeds, Mapping):
            raise SessionError(f"feeds must be a mapping of input name to Tensor or numpy array, "
                               f"got {type(feeds).__name__}")
        expected = [v.name for v in self._input_values]
        unknown = [k for k in feeds if k not in expected]
        if unknown:
            raise SessionError(f"unknown input {unknown[0]!r}; this session's inputs are "
                               f"{', '.join(map(repr, expected))}")
        arrays: dict[str, np.ndarray] = {}
        env: dict[str, int] = {}
        where: dict[str, tuple[str, int]] = {}
        derived = []
        for v in self._input_values:
            if v.name not in feeds:
                raise SessionError(f"missing input {v.name!r} ({self._describe(v)}); feed every "
                                   f"input: {', '.join(map(repr, expected))}")
            x = feeds[v.name]
            if isinstance(x, Tensor):
                arr = x._data
            elif isinstance(x, np.ndarray):
                arr = x
            else:
                raise SessionError(f"input {v.name!r} must be a Tensor or a numpy array, got "
                                   f"{type(x).__name__}")
            if arr.dtype != v.dtype.numpy:
                raise SessionError(f"input {v.name!r}: expected dtype {v.dtype}, got "
                                   f"{_dtype_name(arr.dtype)}")
            if arr.ndim != len(v.shape):
                raise SessionError(f"input {v.name!r}: expected rank {len(v.shape)} "
                                   f"{self._shape_text(v)}, got shape {tuple(arr.shape)}")
            for axis, (d, n) in enumerate(zip(v.shape, arr.shape)):
                if isinstance(d, Dim):
                    syms = d.symbols()
                    name = next(iter(syms)) if len(syms) == 1 else None
                    if name is not None and d == Dim.symbol(name):
                        if name in env and env[name] != n:
                            other, oaxis = where[name]
                            raise SessionError(
                                f"input {v.name!r} axis {axis}: symbolic size {name!r} is {n} "
                                f"here but {env[name]} at input {other!r} axis {oaxis}; one "
                                f"name must have one size in a run")
                        env[name] = n
                        where.setdefault(name, (v.name, axis))
                    else:
                        derived.append((v, axis, d, n))
                elif d != n:
                    raise SessionError(f"input {v.name!r} axis {axis}: expected size {d} (fixed "
                                       f"in {self._shape_text(v)}), got {n}")
            arrays[v.name] = arr
        for v, axis, d, n in derived:
            try:
                want = evaluate(d, env)
            except SymbolicError:
                raise SessionError(f"input {v.name!r} axis {axis}: its size {d} depends on an "
                                   f"axis no input binds") from None
            if want != n:
                raise SessionError(f"input {v.name!r} axis {axis}: expected size {d} = {want}, "
                                   f"got {n}")
        if self._guards:
            guards.check(self._guards, env, where)
        if 0 in env.values():
            self._check_empty_axes(env)
        return arrays, env

    def _check_empty_axes(self, env: dict[str, int]) -> None:
        """Sizes are simplified knowing a symbolic axis is at least 1 (``x[:, 1:]`` has length
        ``seq - 1``); at 0 such a size would be negative, so that run is refused by name."""
        for v in self.optimized_graph.values.values():
            for d in v.shape:
                if not isinstance(d, Dim):
                    continue
                try:
                    n = evaluate(d, env)
                except SymbolicError:
                    continue  # a size decided by data at run time
                if n < 0:
                    zeros = ", ".join(f"{k} = 0" for k, size in env.items() if size == 0)
                    raise SessionError(
                        f"axis sizes {zeros}: this graph assumes a symbolic axis is at least 1 "
                        f"(value %{v.name} would have size {d} = {n}); feed at least one "
                        f"element on that axis")

    @staticmethod
    def _shape_text(v) -> str:
        return "[" + ", ".join(str(d) for d in v.shape) + "]"

    def _describe(self, v) -> str:
        return f"{v.dtype}{self._shape_text(v)}"

    def _check_output_names(self, output_names) -> tuple[str, ...]:
        if output_names is None:
            return self._all_outputs
        if isinstance(output_names, str):
            output_names = (output_names,)
        try:
            names = tuple(output_names)
        except TypeError:
            raise SessionError(f"output_names must be a list of output names (or None for all), "
                               f"got {type(output_names).__name__}") from None
        for n in names:
            if n not in self._output_set:
                raise SessionError(f"unknown output {n!r}; this session's outputs are "
                                   f"{', '.join(map(repr, self._all_outputs))}")
        if len(set(names)) != len(names):
            raise SessionError(f"output_names lists an output twice: {list(names)}")
        return names

    # -- running -------------------------------------------------------------------------------
    def run(self, feeds: Mapping, output_names: Sequence[str] | None = None) -> SessionOutputs:
        """Run on ``feeds`` (input name -> Tensor or numpy array); returns the asked outputs
        (all when ``output_names`` is None) as a read-only mapping of name -> Tensor."""
        compiled = self._compiled
        if compiled is None:
            raise SessionError("this session is closed; create a new Session to run again")
        names = self._check_output_names(output_names)
        arrays, env = self._check_feeds(feeds)
        try:
            if self._blas is None:
                results = compiled.run(arrays, env, names)
            else:
                with bounded(self._blas):
                    results = compiled.run(arrays, env, names)
        except (OneModelError, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001 - the backend's own machinery, not a kernel
            raise OneModelError(f"backend {self.backend!r} failed while running: "
                                f"{type(exc).__name__}: {exc}") from exc
        wrap = Tensor._wrap
        return SessionOutputs({n: wrap(results[n]) for n in names})

    def plan_source(self, feeds: Mapping, output_names: Sequence[str] | None = None) -> str:
        """The generated Python source of the plan that would run these feeds (for debugging)."""
        names = self._check_output_names(output_names)
        _, env = self._check_feeds(feeds)
        if self._compiled is None:
            raise SessionError("this session is closed")
        plan = getattr(self._compiled, "plan", None)
        if plan is None:
            raise OneModelError(f"backend {self.backend!r} does not expose its plans")
        return plan(env, names).source

    def close(self) -> None:
        """Release the compiled plans; `run` afterwards raises `SessionError`."""
        with self._lock:
            self._closed = True
            self._compiled = None

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __reduce__(self):
        """Pickle as the original graph's OneModel bytes and the settings: an unpickled session
        is a new session on the same backend with the same optimization and options (what
        process pools, Ray and Dask workers need); unpickling imports nothing but this module
        and loads the bytes by `om.load`'s safe path."""
        if self._closed:
            raise SessionError("a closed session cannot be pickled; pickle the model (or an "
                               "open session) instead")
        optimization, threads, disabled, options = self._remake
        for key, value in options.items():
            if not _plain(value):
                raise OneModelError(f"this session cannot be pickled: backend option {key!r} "
                                    f"is a {type(value).__name__}; only numbers, strings, bools "
                                    f"and None travel")
        data = dumps(self.graph)
        return (_session_from_bytes, (data, self.backend, optimization, threads, disabled,
                                      options))

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        how = " (auto)" if self.backend_choice is not None else ""
        return (f"Session(backend={self.backend!r}{how}, optimization={self.optimization!r}, "
                f"threads={self.threads}, inputs=[{ins}], outputs=[{outs}], {state})")


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _session_from_bytes(data: bytes, backend: str, optimization: str, threads: int | None,
                        disabled: tuple, options: dict) -> "Session":
    """Unpickling: a new Session over the model in ``data`` (OneModel bytes, loaded safely)."""
    if not isinstance(data, bytes):
        raise OneModelError(f"a pickled session must hold the model's bytes, got "
                            f"{type(data).__name__}")
    graph = loads(data)
    return Session(graph, backend=backend, optimization=optimization, threads=threads,
                   disabled=disabled, **options)


def _dtype_name(dt: np.dtype) -> str:
    try:
        return str(DType.from_numpy(dt))
    except OneModelError:
        return str(dt)


__all__ = ["Session", "SessionOutputs", "ValueInfo", "backends", "LEVELS"]
