"""Progress on stderr for long work (training in the demo, ``onemodel bench``, ``convert``).

On a terminal one line is redrawn in place: a bar, the count, the rate and the time left,
cut to the terminal's width. On a pipe or a file (CI logs, ``2> log``) nothing is redrawn: a
stage prints one line when it starts (``[1/3] timing numpy ...``) and a bar one line when it
closes, so logs stay readable. Hand-written rather than tqdm: these three bars are all the
project needs, and tqdm's log output (carriage-return updates unless disabled) is what the
non-terminal mode avoids.
"""
from __future__ import annotations

import shutil
import sys
import time


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _duration(secs: float) -> str:
    secs = max(secs, 0.0)
    if secs < 60:
        return f"{secs:.1f}s"
    m, s = divmod(int(secs), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


class Bar:
    """A counted task: ``update(done, info)`` while it runs, ``close(info)`` at the end."""

    def __init__(self, total: int, label: str, stream=None, width: int = 30) -> None:
        self.total, self.label, self.width = max(int(total), 0), label, width
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_tty(self.stream)
        self.start = time.perf_counter()

    def _line(self, done: int, info: str, eta: bool) -> str:
        filled = int(self.width * done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"{self.label} [{bar}] {done}/{self.total}"
        elapsed = time.perf_counter() - self.start
        if eta and 0 < done < self.total and elapsed > 0:
            line += f" {done / elapsed:.1f}/s, {_duration(elapsed * (self.total - done) / done)} left"
        return f"{line} {info}".rstrip()

    def update(self, done: int, info: str = "") -> None:
        if self.live:
            cols = shutil.get_terminal_size((100, 24)).columns
            self.stream.write("\r\033[K" + self._line(done, info, True)[:cols - 1])
            self.stream.flush()

    def close(self, info: str = "") -> None:
        secs = time.perf_counter() - self.start
        line = self._line(self.total, f"{info} ({_duration(secs)})".strip(), False)
        self.stream.write(("\r\033[K" if self.live else "") + line + "\n")
        self.stream.flush()


class Stages:
    """A known number of stages, each perhaps counted (bench: one stage per backend, counting
    runs; convert: loading, then writing)."""

    def __init__(self, total: int, stream=None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_tty(self.stream)
        self.index = 0
        self.name = ""
        self.started = time.perf_counter()

    def stage(self, name: str) -> None:
        self.index += 1
        self.name = name
        self.started = time.perf_counter()
        if self.live:
            self._draw(f"{name} ...")
        else:
            print(f"[{self.index}/{self.total}] {name} ...", file=self.stream, flush=True)

    def update(self, done: int, total: int) -> None:
        if self.live:
            elapsed = time.perf_counter() - self.started
            left = f", {_duration(elapsed * (total - done) / done)} left" if 0 < done < total else ""
            self._draw(f"{self.name}: {done}/{total}{left}")

    def _draw(self, text: str) -> None:
        cols = shutil.get_terminal_size((100, 24)).columns
        self.stream.write(f"\r\033[K[{self.index}/{self.total}] {text}"[:cols + 4])
        self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()
