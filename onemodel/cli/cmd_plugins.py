"""``onemodel plugins``: each plugin's distribution, version, contributions, what its
``override=True`` records replace, and load errors."""
from __future__ import annotations

from .. import registry
from ._table import render


def add_parser(sub):
    p = sub.add_parser("plugins", help="list installed plugins and load errors",
                       description="List each plugin: distribution, version, what it "
                                   "contributes, what its override=True records replace in "
                                   "other plugins, and any error met while loading it.",
                       epilog="example: onemodel plugins")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def run(args) -> int:
    if args.json:
        import json

        print(json.dumps([{"plugin": i.name, "distribution": i.distribution, "version": i.version,
                           "contributes": {k: list(v) for k, v in sorted(i.contributes.items())},
                           "overrides": list(i.overrides),
                           "errors": [str(e).splitlines()[0] for e in i.errors]}
                          for i in registry.plugins()], indent=2))
        return 0
    rows = []
    for info in registry.plugins():
        contributes = "; ".join(f"{k}: {len(v)}" for k, v in sorted(info.contributes.items()))
        errors = " | ".join(str(e).splitlines()[0] for e in info.errors) or "-"
        overrides = "; ".join(info.overrides) or "-"
        rows.append([info.name, info.distribution or "(registered at run time)",
                     info.version or "-", contributes or "-", overrides, errors])
    headers = ["plugin", "distribution", "version", "contributes", "overrides", "errors"]
    if not args.markdown:  # a terminal has no room for columns of dashes: say it in a line
        empty = [i for i in (4, 5) if all(r[i] == "-" for r in rows)]
        headers = [h for i, h in enumerate(headers) if i not in empty]
        rows = [[c for i, c in enumerate(r) if i not in empty] for r in rows]
    print(render(headers, rows, markdown=args.markdown))
    if not args.markdown and "errors" not in headers:
        print("no load errors" + ("; no overrides" if "overrides" not in headers else ""))
    return 0
