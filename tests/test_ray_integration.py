"""Batch inference on Ray Data: a real local Ray cluster (nothing mocked), a traced model over a
few thousand rows with 1 and 2 actors, every output compared with a local session."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.formats import dumps

ray = pytest.importorskip("ray", reason="Ray is installed by `make test` (the ray extra)")
pytest.importorskip("ray.data")

from onemodel.integrations.ray import (  # noqa: E402
    OneModelPredictor, RayIntegrationError, batch_predict, predict)

from .session_models import mlp, trace  # noqa: E402

ROWS = 3000


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, ignore_reinit_error=True)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model():
    fn, shape = mlp((12, 16, 5))
    traced = trace(fn, shape)
    x = np.random.default_rng(3).standard_normal((ROWS, 12)).astype(np.float32)
    with traced.create_session() as local:
        want = local.run({"input": x})["output"].numpy()
    return traced, x, want


def _collect(ds) -> dict[str, np.ndarray]:
    rows = ds.take_all()
    order = np.argsort([r["row_id"] for r in rows])
    return {k: np.stack([rows[i][k] for i in order]) for k in rows[0]}


@pytest.mark.parametrize("actors", [1, 2])
def test_every_row_matches_a_local_session(cluster, model, actors):
    traced, x, want = model
    ds = ray.data.from_items([{"input": row, "row_id": i} for i, row in enumerate(x)])
    out = _collect(predict(ds, traced, actors=actors, batch_size=512, keep=("row_id",)))
    assert out["output"].shape == (ROWS, 5)
    np.testing.assert_allclose(out["output"], want, rtol=1e-6, atol=1e-6)


def test_the_model_may_come_from_a_path_or_the_object_store(cluster, model, tmp_path):
    traced, x, want = model
    path = tmp_path / "m.onemodel"
    traced.save(path)
    for source in (str(path), ray.put(dumps(traced.graph))):
        ds = ray.data.from_items([{"features": row, "row_id": i} for i, row in
                                  enumerate(x[:700])])
        out = _collect(predict(ds, source, batch_size=100, keep=("row_id",),  # 100: odd sizes
                               columns={"input": "features"}, outputs={"output": "scores"}))
        np.testing.assert_allclose(out["scores"], want[:700], rtol=1e-6, atol=1e-6)


def test_the_pipeline_reads_and_writes_parquet(cluster, model, tmp_path):
    pd = pytest.importorskip("pandas")
    traced, x, want = model
    src = tmp_path / "in"
    src.mkdir()
    frame = pd.DataFrame({"row_id": np.arange(1000)} | {f"f{j}": x[:1000, j] for j in range(12)})
    frame.to_parquet(src / "part.parquet")

    # the file holds a column per feature; the model takes one (batch, 12) input
    ds = ray.data.read_parquet(str(src)).map_batches(
        lambda b: {"row_id": b["row_id"],
                   "input": np.stack([b[f"f{j}"] for j in range(12)], axis=1)},
        batch_format="numpy")
    ds.write_parquet(str(tmp_path / "stacked"))
    batch_predict(str(tmp_path / "stacked"), traced, str(tmp_path / "out"), keep=("row_id",))
    got = pd.concat(pd.read_parquet(p) for p in sorted((tmp_path / "out").glob("*.parquet")))
    got = got.sort_values("row_id")
    np.testing.assert_allclose(np.stack(got["output"].to_numpy()), want[:1000],
                               rtol=1e-6, atol=1e-6)


def test_predictor_errors_name_the_column_and_the_dtype(model):
    traced, x, _ = model
    pred = OneModelPredictor(traced)
    with pytest.raises(RayIntegrationError, match=r"no column 'input'.*'features'"):
        pred({"features": x[:4]})
    with pytest.raises(om.SessionError, match=r"input 'input': expected dtype f32, got f64"):
        pred({"input": x[:4].astype(np.float64)})
    with pytest.raises(RayIntegrationError, match="not an input of the model"):
        OneModelPredictor(traced, columns={"image": "x"})
    with pytest.raises(RayIntegrationError, match="not an output of the model"):
        OneModelPredictor(traced, outputs={"logits": "x"})
    with pytest.raises(RayIntegrationError, match="model must be a path"):
        OneModelPredictor(42)
    with pytest.raises(RayIntegrationError, match="keep names 'id'"):
        OneModelPredictor(traced, keep=("id",))({"input": x[:2]})


def test_pandas_batches_with_tensor_cells(model):
    pd = pytest.importorskip("pandas")
    traced, x, want = model
    frame = pd.DataFrame({"input": list(x[:9])})
    out = OneModelPredictor(traced)(frame)
    np.testing.assert_allclose(out["output"], want[:9], rtol=1e-6, atol=1e-6)
