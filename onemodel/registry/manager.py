"""The plugin manager: loads entry points once, lazily, and builds validated record tables.

Each plugin's hooks are called one at a time, so a plugin that raises or returns junk is reported
by name and the others keep working (pytest's habit of naming the plugin in every error).
"""
from __future__ import annotations

import importlib.metadata
import os
import threading
import traceback
import warnings
from typing import Any

import attrs
import pluggy

from ..errors import PluginError
from . import hookspecs
from .records import RECORD_TYPES, ModuleDef, OpDef

ENTRY_POINT_GROUP = "onemodel"
DISABLE_ENV = "ONEMODEL_DISABLE_PLUGIN_AUTOLOAD"
#: Plugin objects of the core itself, registered before the entry points: (name, module).
INTERNAL_PLUGINS = (("onemodel-builtin-passes", "onemodel.passes.builtin"),)


def _core_version() -> str | None:
    try:
        return importlib.metadata.version("onemodel")
    except importlib.metadata.PackageNotFoundError:
        return None


@attrs.define
class PluginInfo:
    """What the registry knows of one plugin: where it came from and what it contributed."""

    name: str
    distribution: str | None = None
    version: str | None = None
    contributes: dict[str, list[str]] = attrs.field(factory=dict)
    errors: list[PluginError] = attrs.field(factory=list)

    @property
    def label(self) -> str:
        if self.distribution:
            return f"{self.distribution} {self.version or ''}".strip()
        return self.name


@attrs.define
class Tables:
    ops: dict[str, OpDef]
    kernels: dict[tuple[str, str], Any]
    backends: dict[str, Any]
    passes: dict[str, Any]
    modules: dict[str, ModuleDef]
    methods: dict[str, tuple[str, OpDef]]  # method/dunder name -> (kind, op)
    withdrawn: dict[str, PluginError]  # op names withdrawn because two plugins define them


class Registry:
    def __init__(self) -> None:
        self._pm = pluggy.PluginManager("onemodel")
        self._pm.add_hookspecs(hookspecs)
        self._lock = threading.RLock()
        self._loaded_entry_points = False
        self._infos: dict[str, PluginInfo] = {}
        self._load_errors: list[PluginError] = []
        self._tables: Tables | None = None

    # -- loading -------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        self._loaded_entry_points = True
        self._register_internal()
        if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
            return
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            dist_name = dist.metadata["Name"] if dist is not None else None
            version = dist.version if dist is not None else None
            info = PluginInfo(name=ep.name, distribution=dist_name, version=version)
            self._infos[ep.name] = info
            try:
                plugin = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not take others down
                err = PluginError(
                    f"plugin {ep.name!r} (distribution {dist_name}) failed to import: "
                    f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                    plugin=ep.name, distribution=dist_name)
                info.errors.append(err)
                self._load_errors.append(err)
                continue
            if self._pm.get_plugin(ep.name) is None and not self._pm.is_registered(plugin):
                self._pm.register(plugin, name=ep.name)

    def _register_internal(self) -> None:
        """The core's own plugin objects (built-in passes and fused ops), like any plugin."""
        for name, module in INTERNAL_PLUGINS:
            if self._pm.get_plugin(name) is not None:
                continue
            info = PluginInfo(name=name, distribution="onemodel", version=_core_version())
            self._infos[name] = info
            try:
                plugin = importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001
                err = PluginError(f"internal plugin {name!r} failed to import: "
                                  f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                                  plugin=name, distribution="onemodel")
                info.errors.append(err)
                self._load_errors.append(err)
                continue
            self._pm.register(plugin, name=name)

    def _ensure(self) -> Tables:
        tables = self._tables
        if tables is not None:
            return tables
        with self._lock:
            if self._tables is None:
                if not self._loaded_entry_points:
                    self._load_entry_points()
                self._tables = self._build()
                for err in self.errors():
                    warnings.warn(str(err).splitlines()[0], RuntimeWarning, stacklevel=3)
            return self._tables

    def _info_for(self, name: str) -> PluginInfo:
        if name not in self._infos:
            self._infos[name] = PluginInfo(name=name)
        return self._infos[name]

    def _build(self) -> Tables:
        for info in self._infos.values():
            info.contributes.clear()
            info.errors[:] = [e for e in info.errors if e in self._load_errors]
        collected: dict[str, list[tuple[str, Any]]] = {h: [] for h in RECORD_TYPES}
        for hook_name, record_type in RECORD_TYPES.items():
            hook = getattr(self._pm.hook, hook_name)
            for impl in reversed(hook.get_hookimpls()):  # registration order
                pname = self._pm.get_name(impl.plugin) or repr(impl.plugin)
                info = self._info_for(pname)
                try:
                    result = impl.function()
                    records = list(result or ())
                except Exception as exc:  # noqa: BLE001
                    info.errors.append(PluginError(
                        f"plugin {info.label!r} raised in hook {hook_name}: "
                        f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                        plugin=pname, distribution=info.distribution))
                    continue
                for rec in records:
                    if not isinstance(rec, record_type):
                        info.errors.append(PluginError(
                            f"plugin {info.label!r} returned a malformed record from {hook_name}: "
                            f"expected {record_type.__name__}, got {type(rec).__name__} ({rec!r:.80})",
                            plugin=pname, distribution=info.distribution))
                        continue
                    rec = attrs.evolve(rec, provider=info.label)
                    collected[hook_name].append((pname, rec))
                    label = getattr(rec, "name", None) or f"{rec.op}@{rec.backend}"
                    info.contributes.setdefault(hook_name.removeprefix("onemodel_"), []).append(label)

        ops: dict[str, OpDef] = {}
        owners: dict[str, str] = {}
        withdrawn: dict[str, PluginError] = {}
        for pname, op in collected["onemodel_ops"]:
            if op.name in ops or op.name in withdrawn:
                first = owners[op.name]
                a, b = self._info_for(first), self._info_for(pname)
                err = PluginError(
                    f"op {op.name!r} is defined by two plugins: {a.label!r} and {b.label!r}; "
                    f"uninstall one of them (the op is unavailable until then)",
                    plugin=pname, distribution=b.distribution)
                a.errors.append(err)
                b.errors.append(err)
                ops.pop(op.name, None)
                withdrawn[op.name] = err
                continue
            ops[op.name] = op
            owners[op.name] = pname

        methods: dict[str, tuple[str, OpDef]] = {}
        for op in ops.values():
            for kind, names in (("method", op.methods), ("reflected", op.reflected),
                                ("inplace", op.inplace)):
                for m in names:
                    methods.setdefault(m, (kind, op))

        def by_name(hook):
            table: dict[str, Any] = {}
            for _pname, rec in collected[hook]:
                table.setdefault(rec.name, rec)
            return table

        kernels = {}
        for _pname, k in collected["onemodel_kernels"]:
            kernels.setdefault((k.backend, k.op), k)
        return Tables(ops=ops, kernels=kernels, backends=by_name("onemodel_backends"),
                      passes=by_name("onemodel_passes"), modules=by_name("onemodel_modules"),
                      methods=methods, withdrawn=withdrawn)

    # -- public --------------------------------------------------------------------------
    def register(self, plugin: object, name: str | None = None) -> str:
        """Add a plugin object at run time (notebooks, tests). Returns its registered name.

        `PluginError` for anything that is not a plugin (no ``@hookimpl`` function named after a
        hook), a hook of an unknown name or signature, and a name or object already registered.
        """
        if name is not None and (not isinstance(name, str) or not name):
            raise PluginError(f"registry.register: name must be a non-empty str, got {name!r:.60}")
        hooks = self._hook_names(plugin)
        label = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        if not hooks:
            raise PluginError(
                f"registry.register: {plugin!r:.60} is not a plugin: it has no function marked "
                f"@onemodel.registry.hookimpl (hooks: {', '.join(self._hook_specs())})",
                plugin=label)
        with self._lock:
            if not self._loaded_entry_points:
                self._load_entry_points()
            name = label
            if self._pm.get_plugin(name) is not None:
                raise PluginError(f"registry.register: a plugin named {name!r} is registered "
                                  f"already; unregister it first or pick another name",
                                  plugin=name)
            if self._pm.is_registered(plugin):
                raise PluginError(f"registry.register: this plugin object is registered already "
                                  f"(as {self._pm.get_name(plugin)!r})", plugin=name)
            try:
                self._pm.register(plugin, name=name)
            except pluggy.PluginValidationError as exc:
                why = "; ".join(str(exc).splitlines())
                raise PluginError(f"registry.register: plugin {name!r} is invalid: {why}",
                                  plugin=name) from None
            unknown = [h for h in hooks if h not in self._hook_specs()]
            if unknown:
                self._pm.unregister(plugin)
                raise PluginError(f"registry.register: plugin {name!r} implements unknown "
                                  f"hook(s) {', '.join(unknown)}; the hooks are "
                                  f"{', '.join(self._hook_specs())}", plugin=name)
            self._info_for(name)
            self._tables = None
            return name

    def _hook_names(self, plugin: object) -> list[str]:
        """The names of ``plugin``'s functions marked ``@hookimpl``."""
        if plugin is None or isinstance(plugin, (str, bytes, int, float, complex)):
            return []
        out = []
        for attr in dir(plugin):
            try:
                if self._pm.parse_hookimpl_opts(plugin, attr) is not None:
                    out.append(attr)
            except Exception:  # noqa: BLE001 - a property that raises is no hook
                continue
        return out

    def _hook_specs(self) -> list[str]:
        return sorted(RECORD_TYPES)

    def unregister(self, plugin_or_name: object) -> None:
        with self._lock:
            if isinstance(plugin_or_name, str):
                plugin = self._pm.get_plugin(plugin_or_name)
                name = plugin_or_name
            else:
                plugin = plugin_or_name
                name = self._pm.get_name(plugin)
            if plugin is not None:
                self._pm.unregister(plugin)
            self._infos.pop(name, None)
            self._tables = None

    def tables(self) -> Tables:
        return self._ensure()

    def errors(self) -> list[PluginError]:
        seen, out = set(), []
        for info in self._infos.values():
            for e in info.errors:
                if id(e) not in seen:
                    seen.add(id(e))
                    out.append(e)
        return out

    def plugins(self) -> list[PluginInfo]:
        self._ensure()
        return list(self._infos.values())


REGISTRY = Registry()
