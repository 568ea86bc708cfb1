"""om.nn.LSTM / om.nn.GRU against torch.nn.LSTM / GRU: state dicts copied over, outputs and
gradients compared with what PyTorch computed (tests/fixtures/torch_rnn.npz, written by
tools/make_rnn_fixture.py, so this runs without torch)."""
import json
from pathlib import Path

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

FIXTURE = Path(__file__).parent / "fixtures" / "torch_rnn.npz"
DATA = np.load(FIXTURE)
CASES = sorted({k.split("/")[0] for k in DATA.files})


def _case(name):
    config = json.loads(str(DATA[f"{name}/config"]))
    cls = getattr(om.nn, config.pop("class"))
    model = cls(**config)
    prefix = f"{name}/state/"
    model.load_state_dict({k[len(prefix):]: DATA[k] for k in DATA.files if k.startswith(prefix)})
    model.eval()
    states = [Tensor.from_numpy(DATA[f"{name}/in/{k}"]) for k in ("h0", "c0")
              if f"{name}/in/{k}" in DATA.files]
    hx = None
    if states:
        hx = tuple(states) if cls is om.nn.LSTM else states[0]
    return model, hx


def _flat(out):
    output, h = out
    return [output, *(h if isinstance(h, tuple) else (h,))]


def test_fixture_covers_both_layers():
    kinds = {json.loads(str(DATA[f"{c}/config"]))["class"] for c in CASES}
    assert kinds == {"LSTM", "GRU"}


@pytest.mark.parametrize("name", CASES)
def test_outputs_match_pytorch(name):
    model, hx = _case(name)
    outs = _flat(model(Tensor.from_numpy(DATA[f"{name}/in/x"]), hx))
    assert len(outs) == len([k for k in DATA.files if k.startswith(f"{name}/out/")])
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.numpy(), DATA[f"{name}/out/{k}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_gradients_match_pytorch(name):
    model, hx = _case(name)
    x = Tensor.from_numpy(DATA[f"{name}/in/x"].copy()).requires_grad_()
    outs = _flat(model(x, hx))
    loss = None
    for k, o in enumerate(outs):
        term = (o * Tensor.from_numpy(DATA[f"{name}/weight/{k}"])).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), DATA[f"{name}/grad/x"], rtol=1e-4, atol=1e-5)
    params = dict(model.named_parameters())
    prefix = f"{name}/grad/"
    names = [k[len(prefix):] for k in DATA.files if k.startswith(prefix) and k != f"{prefix}x"]
    assert sorted(names) == sorted(params)
    for key in names:
        np.testing.assert_allclose(params[key].grad.numpy(), DATA[prefix + key], rtol=1e-4,
                                   atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", [c for c in CASES if "unbatched" not in c])
def test_traced_with_symbolic_batch_and_seq_matches_pytorch(name):
    model, hx = _case(name)
    x = DATA[f"{name}/in/x"]
    batch_axis = 0 if model.batch_first else 1
    axes = [None, None, None]
    axes[batch_axis], axes[1 - batch_axis] = "batch", "seq"
    if hx is None:
        traced = model.trace(Tensor.from_numpy(x), *axes)
        feeds = {"input": x}
    else:  # initial states as inputs too: (layers, batch, H)
        states = hx if isinstance(hx, tuple) else (hx,)
        spec = {"x": (Tensor.from_numpy(x), *axes)}
        for k, s in enumerate(states):
            spec[f"s{k}"] = (s, None, "batch", None)

        def fn(x, *s):
            return model(x, tuple(s) if len(s) == 2 else s[0])

        traced = om.trace(fn, spec)
        feeds = {"x": x, **{f"s{k}": s.numpy() for k, s in enumerate(states)}}
    with traced.create_session() as session:
        got = session.run(feeds)
    assert [n.op for n in traced.graph.nodes].count(type(model).__name__.lower()) == \
        model.num_layers * model.num_directions  # one op per layer and direction, any length
    for k, out_name in enumerate(traced.output_names):
        np.testing.assert_allclose(got[out_name].numpy(), DATA[f"{name}/out/{k}"], rtol=1e-5,
                                   atol=1e-6)
