"""The plugin manager: loads entry points once, lazily, and builds validated record tables.

Each plugin's hooks are called one at a time, so a plugin that raises or returns junk is reported
by name and the others keep working (pytest's habit of naming the plugin in every error).
"""
from __future__ import annotations

import difflib
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
from .records import RECORD_TYPES, KernelDef, ModuleDef, OpDef

ENTRY_POINT_GROUP = "onemodel"
DISABLE_ENV = "ONEMODEL_DISABLE_PLUGIN_AUTOLOAD"
#: Plugin objects of the core's own upper layers (the generic passes), registered before the
#: entry points: (name, plugin object). A layer adds itself with `Registry.add_internal` when it
#: is imported, so the registry (the lowest layer) never imports upward.
INTERNAL_PLUGINS: list[tuple[str, object]] = []


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
    overrides: list[str] = attrs.field(factory=list)  # what its override=True records replace

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
    #: per table ("ops", "kernels", "backends", "passes", "modules"): names withdrawn by a clash
    clashes: dict[str, dict[Any, PluginError]] = attrs.field(factory=dict)

    def clash(self, table: str, key: Any) -> PluginError | None:
        """The error that withdrew ``key`` from ``table`` (two plugins define it), or None."""
        return self.clashes.get(table, {}).get(key)


class Registry:
    def __init__(self) -> None:
        self._pm = pluggy.PluginManager("onemodel")
        self._pm.add_hookspecs(hookspecs)
        self._lock = threading.RLock()
        self._loaded_entry_points = False
        self._infos: dict[str, PluginInfo] = {}
        self._load_errors: list[PluginError] = []
        self._tables: Tables | None = None
        self._listeners: list = []

    # -- loading -------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        self._loaded_entry_points = True
        self._register_internal()
        if os.environ.get(DISABLE_ENV, "") in ("", "0"):
            self._register_entry_points()
        self._check_pending()

    def _register_entry_points(self) -> None:
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

    def _check_pending(self) -> None:
        """pluggy's ``check_pending``: a ``@hookimpl`` named after no hook (a misspelling) would
        never be called. Report each one as an error of its plugin instead of staying silent."""
        try:
            self._pm.check_pending()
            return
        except pluggy.PluginValidationError:
            pass  # pluggy names only the first; walk every plugin to report them all
        specs = self._hook_specs()
        for pname, plugin in self._pm.list_name_plugin():
            for caller in self._pm.get_hookcallers(plugin) or ():
                if caller.has_spec():
                    continue
                if all(i.optionalhook for i in caller.get_hookimpls() if i.plugin is plugin):
                    continue
                info = self._info_for(pname)
                close = difflib.get_close_matches(caller.name, specs, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                err = PluginError(
                    f"plugin {info.label!r} implements unknown hook {caller.name!r}, which is "
                    f"never called{hint} (the hooks are {', '.join(specs)})",
                    plugin=pname, distribution=info.distribution)
                info.errors.append(err)
                self._load_errors.append(err)

    def _register_internal(self) -> None:
        """The core's own plugin objects (built-in passes and fused ops), like any plugin."""
        for name, plugin in INTERNAL_PLUGINS:
            if self._pm.get_plugin(name) is not None:
                continue
            self._infos[name] = PluginInfo(name=name, distribution="onemodel",
                                           version=_core_version())
            self._pm.register(plugin, name=name)

    def add_internal(self, name: str, plugin: object) -> None:
        """Register a plugin object of the core's upper layers (``onemodel.passes`` adds its
        generic passes when imported); kept across reloads, shown as distribution onemodel."""
        with self._lock:
            if any(n == name for n, _p in INTERNAL_PLUGINS):
                return
            INTERNAL_PLUGINS.append((name, plugin))
            if self._loaded_entry_points:  # already loaded: add it now and rebuild the tables
                self._register_internal()
            self._changed()

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
            info.overrides.clear()
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
                    rec = attrs.evolve(rec, provider=info.label)  # type: ignore[misc]
                    collected[hook_name].append((pname, rec))
                    label = getattr(rec, "name", None) or \
                        f"{getattr(rec, 'op', '')}@{getattr(rec, 'backend', '')}"
                    info.contributes.setdefault(hook_name.removeprefix("onemodel_"), []).append(label)

        clashes: dict[str, dict[Any, PluginError]] = {}
        resolved: dict[str, dict[Any, Any]] = {}
        for hook_name in RECORD_TYPES:
            table = hook_name.removeprefix("onemodel_")
            resolved[table], clashes[table] = self._resolve(table, collected[hook_name])
        ops: dict[str, OpDef] = resolved["ops"]

        methods: dict[str, tuple[str, OpDef]] = {}
        for op in ops.values():
            for kind, names in (("method", op.methods), ("reflected", op.reflected),
                                ("inplace", op.inplace)):
                for m in names:
                    methods.setdefault(m, (kind, op))
        return Tables(ops=ops, kernels=resolved["kernels"], backends=resolved["backends"],
                      passes=resolved["passes"], modules=resolved["modules"],
                      methods=methods, withdrawn=clashes["ops"], clashes=clashes)

    def _resolve(self, table: str, entries: list[tuple[str, Any]]):
        """One clash rule for every table: a name given by one plugin is taken; a name given by
        several is an error naming them all and the name is withdrawn, unless exactly one of
        them says ``override=True`` (it wins, and the plugin's info lists what it replaced)."""
        by_key: dict[Any, list[tuple[str, Any]]] = {}
        for pname, rec in entries:
            by_key.setdefault(_key(rec), []).append((pname, rec))
        out: dict[Any, Any] = {}
        withdrawn: dict[Any, PluginError] = {}
        what = _WHAT[table]
        for key, given in by_key.items():
            if len(given) == 1:
                out[key] = given[0][1]
                continue
            winners = [(p, r) for p, r in given if r.override]
            if len(winners) == 1:
                pname, rec = winners[0]
                out[key] = rec
                replaced = [self._info_for(p).label for p, r in given if r is not rec]
                self._info_for(pname).overrides.append(
                    f"{what} {_label(key)} (replaces {', '.join(replaced)})")
                continue
            labels = [self._info_for(p).label for p, _ in given]
            why = ("each says override=True; only one may" if winners else
                   "the one that should win must say override=True in its record, or uninstall "
                   "the others")
            err = PluginError(
                f"{what} {_label(key)} is defined by {len(given)} plugins: "
                f"{' and '.join(map(repr, labels))}; {why} (it is unavailable until then)",
                plugin=given[-1][0], distribution=self._info_for(given[-1][0]).distribution)
            for p in dict.fromkeys(p for p, _ in given):
                self._info_for(p).errors.append(err)
            withdrawn[key] = err
        return out, withdrawn

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
            self._changed()
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
            name: str | None
            if isinstance(plugin_or_name, str):
                plugin = self._pm.get_plugin(plugin_or_name)
                name = plugin_or_name
            else:
                plugin = plugin_or_name
                name = self._pm.get_name(plugin)
            if plugin is not None:
                self._pm.unregister(plugin)
            if name is not None:
                self._infos.pop(name, None)
            self._changed()

    def on_change(self, callback) -> None:
        """Call ``callback()`` whenever a plugin is added or removed (caches of resolved names,
        such as ``om.ops``'s, drop what they hold)."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        self._tables = None
        for callback in list(self._listeners):
            callback()

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


_WHAT = {"ops": "op", "kernels": "kernel", "backends": "backend", "passes": "pass",
         "modules": "module"}


def _key(rec: Any) -> Any:
    """A record's name in its table: (backend, op) for kernels, ``name`` for the others."""
    return (rec.backend, rec.op) if isinstance(rec, KernelDef) else rec.name


def _label(key: Any) -> str:
    return f"{key[1]!r} for backend {key[0]!r}" if isinstance(key, tuple) else repr(key)


REGISTRY = Registry()
