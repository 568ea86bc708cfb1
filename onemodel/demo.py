"""OneModel's demo: train a small CNN on procedurally drawn, noisy 12x12 digit glyphs, then
trace it with a symbolic batch, save it as .onemodel and .onnx, reload both and serve them in
sessions on every backend.

Run it with ``python -m onemodel.demo`` (``--help`` for the options). Every step is a function —
`make_dataset`, `build_model`, `train`, `evaluate`, `deploy` — so other demos can reuse them.

The glyphs are seven-segment digits drawn with a random position, slant, stroke width and
brightness, then buried in Gaussian noise and random specks, so a linear model cannot read them
reliably but a small convolutional network can.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import onemodel as om
from onemodel import Tensor
from onemodel.tools.progress import Bar as ProgressBar

SIZE = 12
N_CLASSES = 10

# segments a b c d e f g of a seven-segment display, lit for each digit
_SEGMENTS = {
    0: "abcdef", 1: "bc", 2: "abged", 3: "abgcd", 4: "fgbc",
    5: "afgcd", 6: "afgedc", 7: "abc", 8: "abcdefg", 9: "abcdfg",
}


def _segment_strokes(top: int, left: int, width: int, height: int) -> dict[str, tuple]:
    """Each segment as a line ((r0, c0), (r1, c1)) inside a glyph box."""
    mid = top + height // 2
    bottom, right = top + height - 1, left + width - 1
    return {
        "a": ((top, left), (top, right)),
        "b": ((top, right), (mid, right)),
        "c": ((mid, right), (bottom, right)),
        "d": ((bottom, left), (bottom, right)),
        "e": ((mid, left), (bottom, left)),
        "f": ((top, left), (mid, left)),
        "g": ((mid, left), (mid, right)),
    }


def _draw_glyph(digit: int, rng: np.random.Generator) -> np.ndarray:
    img = np.zeros((SIZE, SIZE), dtype=np.float32)
    width, height = int(rng.integers(4, 7)), int(rng.integers(7, 10))
    top = int(rng.integers(0, SIZE - height + 1))
    left = int(rng.integers(1, SIZE - width))
    slant = rng.uniform(-0.35, 0.35)          # columns moved per row away from the middle
    thick = int(rng.integers(1, 3))
    centre = top + height / 2
    for seg in _SEGMENTS[digit]:
        (r0, c0), (r1, c1) = _segment_strokes(top, left, width, height)[seg]
        steps = max(abs(r1 - r0), abs(c1 - c0)) + 1
        for t in np.linspace(0.0, 1.0, steps * 2):
            r = r0 + (r1 - r0) * t
            c = c0 + (c1 - c0) * t + slant * (centre - r)
            ri, ci = int(round(r)), int(round(c))
            img[max(ri, 0):min(ri + thick, SIZE), max(ci, 0):min(ci + thick, SIZE)] = 1.0
    img *= rng.uniform(0.6, 1.0)               # brightness
    img += rng.normal(0.0, 0.2, img.shape)     # sensor noise
    specks = rng.random(img.shape) < 0.03      # random bright pixels
    img[specks] += rng.uniform(0.5, 1.0, specks.sum())
    return img


@dataclass
class Dataset:
    """Images (N, 1, 12, 12) float32 and labels (N,) int64, split into train and test."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def make_dataset(n_train: int = 6000, n_test: int = 1000, seed: int = 0) -> Dataset:
    """Draw ``n_train + n_test`` glyphs with balanced labels (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    labels = np.arange(n) % N_CLASSES
    rng.shuffle(labels)
    images = np.stack([_draw_glyph(int(d), rng) for d in labels])[:, None, :, :]
    images = images.astype(np.float32)
    return Dataset(images[:n_train], labels[:n_train].astype(np.int64),
                   images[n_train:], labels[n_train:].astype(np.int64))


def build_model(kind: str = "cnn") -> om.nn.NnModule:
    """``"cnn"``: two conv blocks and an MLP head; ``"mlp"``: a plain two-layer perceptron."""
    nn = om.nn
    if kind == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 6 x 6
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32 x 3 x 3
            nn.Flatten(), nn.Linear(32 * 3 * 3, 64), nn.ReLU(), nn.Linear(64, N_CLASSES))
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(SIZE * SIZE, 128), nn.ReLU(),
                             nn.Linear(128, N_CLASSES))
    raise ValueError(f"unknown model kind {kind!r}: use 'cnn' or 'mlp'")


@dataclass
class History:
    """Mean training loss and test accuracy after each epoch."""

    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)


def evaluate(model: om.nn.NnModule, x: np.ndarray, y: np.ndarray, batch_size: int = 500) -> float:
    """Accuracy of ``model`` (in eval mode, without autograd) on images ``x`` and labels ``y``."""
    was_training = model.training
    model.eval()
    correct = 0
    with om.GradMode.no_grad():
        for i in range(0, len(x), batch_size):
            scores = model(Tensor.from_numpy(x[i:i + batch_size])).numpy()
            correct += int((scores.argmax(axis=1) == y[i:i + batch_size]).sum())
    model.train(was_training)
    return correct / max(len(x), 1)


def train(model: om.nn.NnModule, data: Dataset, epochs: int = 10, batch_size: int = 64,
          lr: float = 3e-3, seed: int = 0, progress: bool = True, stream=None) -> History:
    """Adam on the cross-entropy loss, reshuffling each epoch; returns the `History`."""
    rng = np.random.default_rng(seed)
    opt = om.optim.Adam(model.parameters(), lr=lr)
    loss_fn = om.nn.CrossEntropyLoss()
    history = History()
    n = len(data.x_train)
    n_batches = math.ceil(n / batch_size)
    model.train()
    for epoch in range(1, epochs + 1):
        bar = ProgressBar(n_batches, f"epoch {epoch}/{epochs}", stream) if progress else None
        order = rng.permutation(n)
        total = 0.0
        for b in range(n_batches):
            idx = order[b * batch_size:(b + 1) * batch_size]
            x, y = Tensor.from_numpy(data.x_train[idx]), Tensor.from_numpy(data.y_train[idx])
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
            if bar is not None and (b % 5 == 0 or b == n_batches - 1):
                bar.update(b + 1, f"loss {total / (b + 1):.4f}")
        history.loss.append(total / n_batches)
        history.accuracy.append(evaluate(model, data.x_test, data.y_test))
        if bar is not None:
            bar.close(f"loss {history.loss[-1]:.4f} test acc {history.accuracy[-1]:.3f}")
    return history


def _accuracy_of(run, x: np.ndarray, y: np.ndarray, batch_size: int = 500) -> float:
    correct = 0
    for i in range(0, len(x), batch_size):
        scores = run(x[i:i + batch_size])
        correct += int((scores.argmax(axis=1) == y[i:i + batch_size]).sum())
    return correct / max(len(x), 1)


def _median_ms(fn, repeat: int) -> float:
    """Median milliseconds, timed as ``onemodel bench`` times (3 warm-up calls first: plans
    are compiled on first use)."""
    from .tools.bench import time_calls

    return 1e3 * time_calls(fn, runs=repeat, warmup=3).median


def deploy(model: om.nn.NnModule, data: Dataset, out_dir: str, repeat: int = 30) -> list[dict]:
    """Trace ``model`` with a symbolic batch, save .onemodel and .onnx into ``out_dir``, reload
    both, and measure accuracy and latency of eager code, sessions on every backend, the reloaded
    files and (when installed) ONNX Runtime. Returns one row per way of running the model."""
    import os

    os.makedirs(out_dir, exist_ok=True)
    example = Tensor.from_numpy(data.x_test[:5])         # 5: unlike every other size in the model
    traced = model.trace(example, "batch", None, None, None)
    om_path = os.path.join(out_dir, "glyphs.onemodel")
    onnx_path = os.path.join(out_dir, "glyphs.onnx")
    traced.save(om_path)
    traced.save_onnx(onnx_path)
    x1, x64 = data.x_test[:1], data.x_test[:64]
    model.eval()

    def eager(x):
        with om.GradMode.no_grad():
            return model(Tensor.from_numpy(x)).numpy()

    # each way of running gets its session only while it is measured, so a threaded
    # backend's idle workers never share the cores with the next measurement; every session
    # has its backend's default threads (BLAS bounded inside run), as in `onemodel bench`
    sources = (("traced", traced), ("reloaded .onemodel", om.load(om_path)),
               ("reloaded .onnx", om.load_onnx(onnx_path)))
    runners = [("eager", "-", lambda: (eager, None))]

    def start_default():  # what a user gets without naming a backend: backend="auto"
        session = traced.create_session()
        return (lambda x: session.run({"input": x})["output"].numpy()), session
    runners.append(("traced (default)", "auto", start_default))
    for label, source in sources:
        for backend in om.backends():
            def start(source=source, backend=backend):
                session = source.create_session(backend=backend)
                return (lambda x: session.run({"input": x})["output"].numpy()), session
            runners.append((label, backend, start))
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        def start_ort():
            session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
            return (lambda x: session.run(None, {"input": x})[0]), None
        runners.append(("onnxruntime", ort.__version__, start_ort))
    rows = []
    for label, backend, start in runners:
        run, session = start()
        if backend == "auto":
            backend = f"auto: {session.backend}"
        rows.append({"model": label, "backend": backend,
                     "threads": getattr(session, "threads", None),
                     "accuracy": _accuracy_of(run, data.x_test, data.y_test),
                     "batch 1 ms": _median_ms(lambda run=run: run(x1), repeat),
                     "batch 64 ms": _median_ms(lambda run=run: run(x64), max(repeat // 3, 3))})
        if session is not None:
            session.close()
    return rows


def print_table(rows: list[dict]) -> None:
    eager_1, eager_64 = rows[0]["batch 1 ms"], rows[0]["batch 64 ms"]
    header = (f"{'model':<20} {'backend':<14} {'accuracy':>8} {'batch 1':>10} {'vs eager':>8} "
              f"{'batch 64':>10} {'vs eager':>8}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['model']:<20} {r['backend']:<14} {r['accuracy']:>8.3f} "
              f"{r['batch 1 ms']:>8.3f}ms {eager_1 / r['batch 1 ms']:>7.1f}x "
              f"{r['batch 64 ms']:>8.3f}ms {eager_64 / r['batch 64 ms']:>7.1f}x")
    same = len({round(r["accuracy"], 6) for r in rows}) == 1
    print(f"accuracy equal everywhere: {'yes' if same else 'NO'}")
    used = {r["backend"]: r["threads"] for r in rows if r.get("threads") is not None}
    if used:
        from .tools.bench import settings_note

        print(settings_note(used))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onemodel.demo", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train-size", type=int, default=6000)
    parser.add_argument("--test-size", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--out", default="demo-output",
                        help="folder for the saved model files (default: demo-output)")
    parser.add_argument("--no-deploy", action="store_true",
                        help="stop after training (no trace, files or sessions)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    om.manual_seed(args.seed)
    data = make_dataset(args.train_size, args.test_size, seed=args.seed)
    model = build_model(args.model)
    n_params = sum(p.numel for p in model.parameters())
    print(f"dataset: {len(data.x_train)} train / {len(data.x_test)} test noisy {SIZE}x{SIZE} "
          f"glyphs, {N_CLASSES} classes")
    print(f"model: {args.model}, {n_params} parameters")
    history = train(model, data, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                    seed=args.seed, progress=not args.quiet)
    accuracy = evaluate(model, data.x_test, data.y_test)
    print(f"test accuracy: {accuracy:.3f} (final training loss {history.loss[-1]:.4f}, "
          f"{time.perf_counter() - start:.1f}s)")
    if args.no_deploy:
        return 0
    print("\ntracing with a symbolic batch, saving, reloading, serving in sessions ...")
    rows = deploy(model, data, args.out)
    print_table(rows)
    same = len({round(r["accuracy"], 6) for r in rows}) == 1
    print(f"\nmodel files left in {args.out}/: glyphs.onemodel, glyphs.onnx "
          f"({time.perf_counter() - start:.1f}s in all)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
