"""The ``onemodel`` command line. Each subcommand lives in ``cmd_<name>.py`` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``."""
from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import OneModelError
from ._help import HelpFormatter

COMMANDS = ("ops", "plugins", "info", "show", "convert", "run", "bench", "cache")

EPILOG = """examples:
  onemodel ops                        the registry as a table
  onemodel ops layer_norm             one op in detail (--json for programs)
  onemodel plugins                    installed plugins, what they add, errors
  onemodel info model.onemodel        inputs, outputs, op counts, parameters
  onemodel show model.onemodel --dot  the graph for Graphviz
  onemodel convert model.onemodel model.onnx
  onemodel run model.onemodel --input input=x.npy --output-dir out/
  onemodel bench model.onemodel --backend numpy,threaded --batch 64
  onemodel cache                      the on-disk cache: folder, entries, size
  onemodel cache clear                remove its entries

Each command's --help has more, with examples.
"""


class CliError(OneModelError):
    """Bad command-line input (wrong extension, malformed argument)."""


class _Parser(argparse.ArgumentParser):
    """Every command's parser: examples and lists in its help keep their lines."""

    def __init__(self, *args, **kwargs):
        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onemodel",
                     description="Inspect, convert, run and benchmark OneModel models.",
                     epilog=EPILOG)
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"{__name__}.cmd_{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.cmd_{name}":
                raise
            continue
        p = mod.add_parser(sub)
        p.set_defaults(run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:  # `onemodel show model | head`: the reader left, which is fine
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("onemodel: interrupted", file=sys.stderr)
        return 130
    except (OneModelError, OSError, ValueError) as exc:
        if args.debug:
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, FileNotFoundError) and exc.filename:
            message = f"no such file: {exc.filename}"
        print(f"onemodel: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
