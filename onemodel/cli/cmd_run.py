"""``onemodel run FILE --input NAME=FILE.npy``: run a model on arrays from .npy files."""
from __future__ import annotations

import os
import sys

import numpy as np

from ._models import CliInputError, load_model


def add_parser(sub):
    p = sub.add_parser("run", help="run a model on .npy inputs",
                       description="Run a .onemodel or .onnx model in a session and print each "
                                   "output's shape and a short summary; --output-dir writes them "
                                   "as .npy files.",
                       epilog="examples:\n  onemodel run model.onemodel --input input=x.npy "
                              "--output-dir out/\n"
                              "  onemodel run model.onemodel --input input=x64.npy --cast\n"
                              "      (a float64 file for a float32 input: cast, with a note)")
    p.add_argument("file", help="a .onemodel or .onnx file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeat for several inputs)")
    p.add_argument("--output-dir", help="write each output to DIR/NAME.npy")
    p.add_argument("--backend", default="auto",
                   help="backend name (default: auto, the fastest installed one)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="the most threads the run may use, BLAS included (default: the "
                        "backend's own: numpy 1, threaded every core)")
    p.add_argument("--optimization", default="all", choices=("none", "basic", "all"),
                   help="graph passes before running: none, basic (safe clean-ups) or all "
                        "(fusions too; default)")
    p.add_argument("--cast", action="store_true",
                   help="convert a file of another dtype to the input's (numpy's float64 for "
                        "a float32 input, ints for floats...), with a note saying whether any "
                        "value changed; without it such a file is refused, as session.run "
                        "refuses the array")
    return p


def read_feeds(specs: list[str], paths: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of ``--input NAME=FILE.npy``; ``paths`` (when given) gets each NAME's FILE."""
    feeds = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise CliInputError(f"--input {spec!r}: expected NAME=FILE.npy")
        if name in feeds:
            raise CliInputError(f"--input {name!r} is given twice")
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise CliInputError(f"--input {name}: {path} is not a valid .npy file ({exc})") from None
        if not isinstance(feeds[name], np.ndarray):
            raise CliInputError(f"--input {name}: {path} holds several arrays; give one .npy file")
        if paths is not None:
            paths[name] = path
    return feeds


def cast_feeds(feeds: dict[str, np.ndarray], inputs, allow: bool,
               paths: dict[str, str] | None = None) -> list[str]:
    """Feeds converted in place to the dtypes the model takes, only with ``allow`` (--cast):
    like ``session.run``, the command never casts on its own, within a kind (numpy's float64
    default for an f32 input) or across kinds. Returns one note per cast, saying whether
    values changed."""
    notes = []
    paths = paths or {}
    for info in inputs:
        a = feeds.get(info.name)
        if a is None:
            continue  # the session names a missing input
        want = info.dtype.numpy
        if a.dtype == want:
            continue
        source = f"the file {paths[info.name]}" if info.name in paths else "the file"
        if a.dtype.kind not in "biuf":
            raise CliInputError(f"--input {info.name}: input {info.name!r} takes {info.dtype} "
                                f"({want}); {source} holds {a.dtype} values, which no cast "
                                f"converts")
        if not allow:
            raise CliInputError(f"--input {info.name}: input {info.name!r} takes {info.dtype} "
                                f"({want}), {source} holds {a.dtype}; pass --cast to convert "
                                f"it (a note says whether values change)")
        with np.errstate(all="ignore"):
            b = a.astype(want)
            back = b.astype(a.dtype)
        same = np.array_equal(back, a, equal_nan=a.dtype.kind == "f")
        if same:
            how = "no value changed"
        else:
            changed = int(np.count_nonzero(~((back == a) | (np.isnan(a) & np.isnan(back))
                                             if a.dtype.kind == "f" else back == a)))
            how = f"lossy: {changed} of {a.size} values changed"
            if a.dtype.kind in "fiu" and np.all(np.isfinite(b.astype(np.float64))):
                diff = np.abs(back.astype(np.float64) - a.astype(np.float64))
                how += f", by up to {np.nanmax(diff):.3g}"
        notes.append(f"input {info.name!r}: {a.dtype} cast to {info.dtype} ({how})")
        feeds[info.name] = b
    return notes


def summary(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    if a.dtype.kind in "fiub":
        f = a.astype(np.float64)
        return f"min {f.min():.4g}  max {f.max():.4g}  mean {f.mean():.4g}"
    return ""


def run(args) -> int:
    traced = load_model(args.file)
    paths: dict[str, str] = {}
    feeds = read_feeds(args.input, paths)
    with traced.create_session(backend=args.backend, optimization=args.optimization,
                               threads=args.threads) as session:
        for note in cast_feeds(feeds, session.inputs, args.cast, paths):
            print(f"note: {note}", file=sys.stderr)
        outputs = session.run(feeds)
        for name, t in outputs.items():
            a = t.numpy()
            print(f"{name}: {t.dtype}{list(a.shape)}  {summary(a)}")
            if args.output_dir:
                os.makedirs(args.output_dir, exist_ok=True)
                target = os.path.join(args.output_dir, f"{name}.npy")
                tmp = target + ".tmp"
                with open(tmp, "wb") as f:
                    np.save(f, a, allow_pickle=False)
                os.replace(tmp, target)
        if args.output_dir:
            print(f"wrote {len(outputs)} output(s) to {args.output_dir}")
    return 0
