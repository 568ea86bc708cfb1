"""The weight block: every constant a program reads, packed once per session, in one float32
array (64-byte aligned entries). Linear and matmul weights are stored as 16-column panels
(``panels[j][k][c] = B[k, 16 j + c]``, zero padded), the layout the GEMM microkernel streams."""
from __future__ import annotations

import threading

import numpy as np

#: an entry's alignment in floats (64 bytes)
ALIGN = 16


def pack_panels(b_kn: np.ndarray) -> np.ndarray:
    """B (K, N) as contiguous 16-column panels of shape (ceil(N/16), K, 16)."""
    k, n = b_kn.shape
    npan = (n + 15) // 16
    padded = np.zeros((k, npan * 16), np.float32)
    padded[:, :n] = b_kn
    return np.ascontiguousarray(padded.reshape(k, npan, 16).transpose(1, 0, 2))


class WeightBlock:
    """Constants by key -> offset; grows on demand (a plan built later sees the new array)."""

    def __init__(self) -> None:
        self._offsets: dict = {}
        self._size = 0
        self._lock = threading.Lock()
        self.array = np.zeros(ALIGN, np.float32)

    def offset(self, key, make) -> int:
        off = self._offsets.get(key)
        if off is not None:
            return off
        with self._lock:
            off = self._offsets.get(key)
            if off is None:
                data = np.ascontiguousarray(make(), dtype=np.float32).ravel()
                off = self._size
                end = off + max(ALIGN, (data.size + ALIGN - 1) // ALIGN * ALIGN)
                if end > self.array.size:  # grow by doubling; running plans keep the old array
                    arr = np.zeros(max(end, 2 * self.array.size), np.float32)
                    arr[:off] = self.array[:off]
                    self.array = arr
                self.array[off: off + data.size] = data
                self._size = end
                self._offsets[key] = off
            return off

    def reserve(self, floats: int) -> None:
        """Room for ``floats`` in all, made once: packing a large model then writes each entry
        once instead of copying the block at every doubling (untouched room costs no memory:
        np.zeros maps pages only when written)."""
        with self._lock:
            if floats > self.array.size:
                arr = np.zeros(int(floats), np.float32)
                arr[:self._size] = self.array[:self._size]
                self.array = arr

    def ints(self, key, value: np.ndarray) -> int:
        """An int64 constant's offset in int64 elements (entries are 64-byte aligned)."""
        arr = np.ascontiguousarray(value, dtype=np.int64).reshape(-1)
        return self.offset(("int64", key), lambda: arr.view(np.float32)) // 2

    def plain(self, name: str, value: np.ndarray) -> int:
        return self.offset(("plain", name), lambda: value.astype(np.float32))

    def panels(self, name: str, b_kn_fn) -> int:
        return self.offset(("panels", name), lambda: pack_panels(b_kn_fn()))

    @property
    def used(self) -> int:
        """The floats holding entries: every constant a plan reads lies below this (the
        array past it is room to grow; plan_check bounds a loaded plan by it)."""
        return self._size

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    # -- the plan cache (plan_cache.py) ----------------------------------------------------------
    def snapshot(self) -> tuple[list, np.ndarray]:
        """``(layout, data)``: every key with its offset, and the block's used floats (a view:
        what an array holds below the used size is never written again; growing makes a new
        array)."""
        with self._lock:
            return list(self._offsets.items()), self.array[:self._size]

    def adopt(self, layout, data: np.ndarray) -> bool:
        """Take in a stored block (what `snapshot` returned in another process, for the same
        graph) so that plans lowered there find their constants at the same offsets. False,
        changing nothing, when a key this block holds sits elsewhere there or a new one would
        overlap one of ours."""
        with self._lock:
            mine = self._offsets
            theirs = dict(layout)
            if len(theirs) != len(layout) or any(theirs.get(k, -1) != o for k, o in mine.items()
                                                 if k in theirs):
                return False
            size = int(data.size)
            if all(k in theirs for k in mine):  # ours is a part of theirs: take their array
                self.array = data if data.size >= ALIGN else np.zeros(ALIGN, np.float32)
                self._offsets = dict(theirs)
                self._size = size
                return True
            # else copy their new entries into free space past ours (spans: up to the next key)
            ends = sorted(set(theirs.values()) | {size})
            span = {o: ends[ends.index(o) + 1] for o in set(theirs.values())}
            new = [(k, o) for k, o in theirs.items() if k not in mine]
            if any(o < self._size for _, o in new):
                return False
            end = max([self._size] + [span[o] for _, o in new])
            if end > self.array.size:
                arr = np.zeros(end, np.float32)
                arr[:self._size] = self.array[:self._size]
                self.array = arr
            for _k, o in new:
                self.array[o:span[o]] = data[o:span[o]]
            self._offsets = {**mine, **{k: o for k, o in new}}
            self._size = end
            return True
