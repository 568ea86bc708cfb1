"""The demo (python -m onemodel.demo): its functions on a small budget, and main's output."""
from __future__ import annotations

import io

import numpy as np

import onemodel as om
from onemodel import Tensor, demo


def test_make_dataset_is_deterministic_and_balanced():
    a = demo.make_dataset(200, 50, seed=3)
    b = demo.make_dataset(200, 50, seed=3)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert a.x_train.shape == (200, 1, 12, 12) and a.x_train.dtype == np.float32
    assert a.y_test.shape == (50,) and a.y_train.dtype == np.int64
    assert set(np.bincount(np.concatenate([a.y_train, a.y_test]))) == {25}
    assert not np.array_equal(a.x_train, demo.make_dataset(200, 50, seed=4).x_train)


def test_models_map_glyphs_to_ten_scores():
    x = Tensor.from_numpy(demo.make_dataset(4, 0).x_train)
    for kind in ("cnn", "mlp"):
        assert demo.build_model(kind)(x).shape == (4, 10)


def test_training_beats_chance_with_a_progress_bar():
    om.manual_seed(0)
    data = demo.make_dataset(2000, 300, seed=0)
    model = demo.build_model("cnn")
    stream = io.StringIO()
    history = demo.train(model, data, epochs=2, lr=1e-2, stream=stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("epoch 1/2 [") and "test acc" in lines[0]
    assert history.loss[1] < history.loss[0]
    assert demo.evaluate(model, data.x_test, data.y_test) > 0.3   # chance is 0.1
    assert model.training  # evaluate restores the mode


def test_main_prints_the_test_accuracy(capsys):
    assert demo.main(["--epochs", "1", "--train-size", "200", "--test-size", "50",
                      "--quiet", "--no-deploy"]) == 0
    assert "test accuracy:" in capsys.readouterr().out


def test_main_deploys_and_every_way_of_running_agrees(capsys, tmp_path):
    out = tmp_path / "demo-files"
    assert demo.main(["--epochs", "1", "--train-size", "300", "--test-size", "100", "--quiet",
                      "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "accuracy equal everywhere: yes" in text
    for label in ("eager", "traced", "reloaded .onemodel", "reloaded .onnx"):
        assert label in text
    for backend in om.backends():
        assert backend in text
    assert (out / "glyphs.onemodel").exists() and (out / "glyphs.onnx").exists()
