"""``onemodel cache``: where the on-disk cache is, what it holds; ``onemodel cache clear``."""
from __future__ import annotations

import json
import sys
import time

from ._table import human_bytes, render

EPILOG = """examples:
  onemodel cache           the folder, whether it is on, entries and bytes
  onemodel cache --json    the same for programs
  onemodel cache clear     remove every entry

Backends keep there what is costly to rebuild in a new process (such as a shape
signature's lowered plan and packed weights). The folder is $ONEMODEL_CACHE_DIR, else
$XDG_CACHE_HOME/onemodel, else ~/.cache/onemodel; ONEMODEL_CACHE=0 turns the cache off and
ONEMODEL_CACHE_MAX_MB bounds each backend's part (default 1024; the entries used least recently
go first). clear removes only the cache's own files (*.omcache and temporary files); a symbolic
link under such a name goes itself, never what it points at. It goes on past what it cannot
remove (a directory under an entry's name, a backend folder that is a symbolic link, a file
the system refuses), names each on stderr and exits with 1; 0 when everything went.
"""


def add_parser(sub):
    p = sub.add_parser("cache", help="show or clear the on-disk cache",
                       description="Show the on-disk cache (folder, setting, entries and size "
                                   "per backend) or clear it.",
                       epilog=EPILOG)
    p.add_argument("action", nargs="?", choices=("show", "clear"), default="show",
                   help="show (default) or clear")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def _age(seconds: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= n:
            return f"{seconds / n:.0f} {unit} ago"
    return "just now"


def _clear(cache, args) -> int:
    """Remove what can go; 1 when something stayed (each named on stderr, or in the JSON)."""
    where = cache.location()
    done = cache.clear_entries()
    removed = len(done.removed)
    if args.json:
        print(json.dumps({"location": where, "removed_files": removed,
                          "not_removed": [{"path": p, "reason": r} for p, r in done.left]},
                         indent=2))
    else:
        print(f"removed {removed} file{'s' if removed != 1 else ''} from {where}")
        for path, reason in done.left:
            print(f"onemodel: not removed: {path} ({reason})", file=sys.stderr)
    return 1 if done.left else 0


def run(args) -> int:
    from .. import cache

    if args.action == "clear":
        return _clear(cache, args)
    entries = cache.entries()
    spaces: dict[str, list] = {}
    for e in entries:
        spaces.setdefault(e.namespace, []).append(e)
    info = {"location": cache.location(), "enabled": cache.enabled(),
            "max_bytes_per_backend": cache.max_bytes(),
            "namespaces": {name: {"entries": len(es), "bytes": sum(e.bytes for e in es),
                                  "last_used": max(e.used for e in es)}
                           for name, es in sorted(spaces.items())}}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"folder:  {info['location']}")
    print(f"setting: {'on' if info['enabled'] else 'off (ONEMODEL_CACHE)'}, at most "
          f"{human_bytes(info['max_bytes_per_backend'])} per backend")
    if not spaces:
        print("no entries")
        return 0
    now = time.time()
    rows = [[name, str(s["entries"]), human_bytes(s["bytes"]), _age(now - s["last_used"])]
            for name, s in info["namespaces"].items()]
    print(render(["backend", "entries", "size", "last used"], rows))
    return 0
