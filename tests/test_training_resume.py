"""A small model trained with a schedule, gradient clipping and a checkpoint mid-run; resumed from
the file in a fresh model, optimizer and scheduler, it continues bit-identically to the run
that was never interrupted."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor

STEPS, CUT = 40, 17


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ rng.normal(size=(4, 1)) + 0.1 * np.sin(3 * x[:, :1])).astype(np.float32)
    return Tensor.from_numpy(x), Tensor.from_numpy(y)


def build(seed):
    om.manual_seed(seed)
    nn = om.nn
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") else decay).append(p)
    opt = om.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
                         lr=0.05, amsgrad=True)
    sched = om.optim.lr_scheduler.SequentialLR(
        opt, [om.optim.lr_scheduler.LinearLR(opt, start_factor=0.2, total_iters=5),
              om.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS - 5, eta_min=1e-3)],
        milestones=[5])
    return model, opt, sched


def train(model, opt, sched, start, stop, losses, ckpt=None):
    x, y = data()
    loss_fn = om.nn.MSELoss()
    for step in range(start, stop):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        om.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if ckpt is not None and step + 1 == CUT:
            om.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": sched.state_dict(), "step": step + 1,
                     "losses": list(losses)}, ckpt)


def test_resume_from_a_checkpoint_is_bit_identical(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    model, opt, sched = build(0)
    straight: list[float] = []
    train(model, opt, sched, 0, STEPS, straight, ckpt=ckpt)
    assert straight[-1] < 0.2 * straight[0], straight  # it did train
    final = {k: v.numpy().copy() for k, v in model.state_dict().items()}

    state = om.load_checkpoint(ckpt)
    model2, opt2, sched2 = build(1)  # other initial weights: the file must override them
    model2.load_state_dict(state["model"])
    opt2.load_state_dict(state["optimizer"])
    sched2.load_state_dict(state["scheduler"])
    assert sched2.get_last_lr() == pytest.approx(state["scheduler"]["_last_lr"])
    losses = state["losses"]
    train(model2, opt2, sched2, state["step"], STEPS, losses)

    assert losses == straight  # every loss, bit for bit
    for k, v in model2.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), final[k], err_msg=k)
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]
