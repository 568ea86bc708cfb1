"""First-fit allocation of the scratch arena by liveness (offsets and sizes in bytes, slots
64-byte aligned: a vector load of any element type finds its operand aligned)."""
from __future__ import annotations

ALIGN = 64  # bytes


class Arena:
    def __init__(self) -> None:
        self.free: list[tuple[int, int]] = []  # (offset, size), sorted, coalesced
        self.top = 0
        self.peak = 0

    def __copy__(self) -> "Arena":
        """A copy of its own free list (a lowering's trial rolls the arena back to it)."""
        other = Arena()
        other.free, other.top, other.peak = list(self.free), self.top, self.peak
        return other

    def alloc(self, n: int) -> int:
        n = max(ALIGN, (int(n) + ALIGN - 1) // ALIGN * ALIGN)
        for i, (off, size) in enumerate(self.free):
            if size >= n:
                if size == n:
                    del self.free[i]
                else:
                    self.free[i] = (off + n, size - n)
                return off
        off = self.top
        self.top += n
        self.peak = max(self.peak, self.top)
        return off

    def release(self, off: int, n: int) -> None:
        n = max(ALIGN, (int(n) + ALIGN - 1) // ALIGN * ALIGN)
        self.free.append((off, n))
        self.free.sort()
        merged: list[tuple[int, int]] = []
        for o, s in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        if merged and merged[-1][0] + merged[-1][1] == self.top:
            self.top = merged.pop()[0]
        self.free = merged

    @property
    def size(self) -> int:
        """The bytes the arena needs (its high-water mark)."""
        return self.peak
