"""References for lstm and gru (in the testing kit, `onemodel.testing.rnn_reference`, where
backend plugins' tests find them too), and for triu and tril."""
import numpy as np

from onemodel.testing.rnn_reference import gru, lstm

REFERENCES = {"lstm": lstm, "gru": gru}


def _triangle(x, diagonal, keep):
    out = np.array(x, copy=True)
    rows, cols = out.shape[-2:]
    for i in range(rows):
        for j in range(cols):
            if not keep(j - i, diagonal):
                out[..., i, j] = 0
    return out


REFERENCES["triu"] = lambda x, diagonal=0: _triangle(x, diagonal, lambda d, k: d >= k)
REFERENCES["tril"] = lambda x, diagonal=0: _triangle(x, diagonal, lambda d, k: d <= k)
