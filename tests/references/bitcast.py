"""Reference for bitcast (onemodel-ops-basic): the input's little-endian bytes regrouped by hand
(``int.from_bytes`` per target word, two's complement for signed ints) instead of numpy's view;
a float target is labelled from its integer bit pattern (so NaN payloads survive)."""
import numpy as np

import onemodel as om


def _bitcast(x, dtype):
    x = np.asarray(x)
    dst = np.dtype(om.DType.parse(dtype).numpy)
    data = x.astype(x.dtype.newbyteorder("<")).tobytes()
    size = dst.itemsize
    words = [int.from_bytes(data[i:i + size], "little") for i in range(0, len(data), size)]
    if dst == np.bool_:
        vals = np.array([w != 0 for w in words], dtype=bool)
    elif dst.kind == "i":
        vals = np.array([w - (1 << 8 * size) if w >> (8 * size - 1) else w for w in words],
                        dtype=dst)
    else:
        vals = np.array(words, dtype=f"u{size}")
        vals = vals if dst.kind == "u" else vals.view(dst)
    lead = int(np.prod(x.shape[:-1], dtype=np.int64))
    shape = (*x.shape[:-1], len(words) // lead) if x.ndim else ()
    return vals.reshape(shape)


REFERENCES = {"bitcast": _bitcast}
