"""PyTorch models exported to ONNX for tests/test_onnx_models.py (and the committed copies that
tools/make_onnx_model_fixtures.py writes into tests/fixtures/torch_onnx/).

Every builder returns a `Built`: the module in eval mode with random weights (a fixed seed,
nothing downloaded), example inputs at one size, the names and dynamic axes for
``torch.onnx.export``, and ``make_inputs(batch, seq)`` for the sizes the tests compare at.
torch (and torchvision or transformers for their builders) is imported inside the builders, so
this module imports without them.
"""
from __future__ import annotations

import sys
from typing import Callable, NamedTuple

import numpy as np

SIZES = ((2, 5), (3, 9))  # (batch, seq): two batch sizes and two sequence lengths


class Built(NamedTuple):
    model: object
    input_names: list
    output_names: list
    dynamic_axes: dict
    make_inputs: Callable  # (batch, seq) -> list of numpy arrays
    sizes: tuple = SIZES   # the (batch, seq) pairs the export is expected to run at


def _torch():
    import torch

    torch.manual_seed(0)
    return torch


def _rand(seed):
    rng = np.random.default_rng(seed)
    return lambda *shape: rng.standard_normal(shape).astype(np.float32)


def lstm() -> Built:
    torch = _torch()
    model = torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True).eval()
    return Built(model, ["x"], ["y", "h_n", "c_n"],
                 {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"},
                  "h_n": {1: "batch"}, "c_n": {1: "batch"}},
                 lambda b, t: [_rand(b * 100 + t)(b, t, 8)])


class _GruWithState:
    @staticmethod
    def build():
        torch = _torch()

        class GruNet(torch.nn.Module):
            """A 2-layer GRU over (seq, batch, features) with its initial state as an input."""

            def __init__(self):
                super().__init__()
                self.gru = torch.nn.GRU(8, 12, num_layers=2)
                self.head = torch.nn.Linear(12, 4)

            def forward(self, x, h0):
                y, h = self.gru(x, h0)
                return self.head(y), h

        return GruNet().eval()


def gru() -> Built:
    model = _GruWithState.build()
    return Built(model, ["x", "h0"], ["y", "h_n"],
                 {"x": {0: "seq", 1: "batch"}, "h0": {1: "batch"}, "y": {0: "seq", 1: "batch"},
                  "h_n": {1: "batch"}},
                 lambda b, t: [_rand(b * 100 + t)(t, b, 8), _rand(b + t)(2, b, 12)])


def transformer_decoder_layer() -> Built:
    torch = _torch()

    class Decoder(torch.nn.Module):
        """One nn.TransformerDecoderLayer with a causal mask on the target."""

        def __init__(self):
            super().__init__()
            self.layer = torch.nn.TransformerDecoderLayer(16, 2, dim_feedforward=32,
                                                          dropout=0.1, batch_first=True)

        def forward(self, tgt, memory):
            t = tgt.shape[1]
            mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
            return self.layer(tgt, memory, tgt_mask=mask)

    model = Decoder().eval()
    # torch 2.13's legacy exporter writes the attention's sequence length into its Reshape
    # targets (ONNX Runtime fails at another length too): one length, two batch sizes
    return Built(model, ["tgt", "memory"], ["y"],
                 {"tgt": {0: "batch"}, "memory": {0: "batch"}, "y": {0: "batch"}},
                 lambda b, t: [_rand(b * 100 + t)(b, t, 16), _rand(b + t)(b, t + 2, 16)],
                 sizes=((2, 5), (3, 5)))


def conv1d_audio() -> Built:
    torch = _torch()
    nn = torch.nn

    class AudioNet(nn.Module):
        """Conv1d front end over raw samples, batch norm, pooling over time, a linear head."""

        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv1d(1, 8, 9, stride=4, padding=4), nn.BatchNorm1d(8), nn.ReLU(),
                nn.Conv1d(8, 16, 3, padding=1), nn.BatchNorm1d(16), nn.ReLU(),
                nn.Conv1d(16, 16, 3, stride=2, dilation=2), nn.ReLU())
            self.head = nn.Linear(16, 5)

        def forward(self, wave):
            h = self.features(wave)
            return self.head(h.mean(dim=2)), h

    model = AudioNet()
    with torch.no_grad():  # running statistics that are not the identity
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    model.eval()
    return Built(model, ["wave"], ["logits", "features"],
                 {"wave": {0: "batch", 2: "samples"}, "logits": {0: "batch"},
                  "features": {0: "batch", 2: "frames"}},
                 lambda b, t: [_rand(b * 100 + t)(b, 1, 64 * t)])


#: torch.nn built-ins: their exported files are committed (tests run without torch)
NN_BUILDERS = {"lstm": lstm, "gru": gru, "transformer_decoder_layer": transformer_decoder_layer,
               "conv1d_audio": conv1d_audio}


def run_torch(built: Built, inputs) -> list:
    torch = _torch()
    with torch.no_grad():
        out = built.model(*(torch.from_numpy(a) for a in inputs))
    flat = []

    def walk(o):
        if isinstance(o, (tuple, list)):
            for p in o:
                walk(p)
        else:
            flat.append(o.detach().numpy())

    walk(out)
    return flat


def export(built: Built, path, dynamo: bool = False, opset: int = 17) -> None:
    """torch.onnx.export with the builder's names and dynamic axes (legacy exporter unless
    ``dynamo``)."""
    torch = _torch()
    example = tuple(torch.from_numpy(a) for a in built.make_inputs(*built.sizes[0]))
    if dynamo:
        dims = {}
        shapes = tuple({ax: dims.setdefault(dim, torch.export.Dim(dim, min=1))
                        for ax, dim in built.dynamic_axes[name].items()}
                       for name in built.input_names)
        torch.onnx.export(built.model, example, str(path), dynamo=True,
                          input_names=built.input_names, output_names=built.output_names,
                          dynamic_shapes=shapes, opset_version=max(opset, 18))
    else:
        torch.onnx.export(built.model, example, str(path), dynamo=False,
                          input_names=built.input_names, output_names=built.output_names,
                          dynamic_axes=built.dynamic_axes, opset_version=opset)


# -- torchvision (random weights, nothing downloaded) -------------------------------------------
#: schemas of torchvision's C++ operators, defined before ``import torchvision`` where its
#: compiled library cannot load (a CUDA build beside the CPU torch wheel fails with "operator
#: torchvision::nms does not exist"): torchvision's Python registers fake kernels for them at
#: import, and the classification models never call them.
_TV_SCHEMAS = {
    "nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                 "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                  "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward": "(Tensor grad, Tensor rois, float spatial_scale, SymInt "
                           "pooled_height, SymInt pooled_width, SymInt batch_size, SymInt "
                           "channels, SymInt height, SymInt width, int sampling_ratio, bool "
                           "aligned) -> Tensor",
    "ps_roi_align": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                    "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward": "(Tensor grad, Tensor rois, Tensor channel_mapping, float "
                              "spatial_scale, SymInt pooled_height, SymInt pooled_width, int "
                              "sampling_ratio, SymInt batch_size, SymInt channels, SymInt "
                              "height, SymInt width) -> Tensor",
    "roi_pool": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt "
                "pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward": "(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
                          "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt "
                          "channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool": "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                   "SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward": "(Tensor grad, Tensor rois, Tensor channel_mapping, float "
                             "spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt "
                             "batch_size, SymInt channels, SymInt height, SymInt width) -> "
                             "Tensor",
    "deform_conv2d": "(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
                     "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt "
                     "dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, bool "
                     "use_mask) -> Tensor",
    "_deform_conv2d_backward": "(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
                               "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, "
                               "SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt "
                               "dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) "
                               "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
}
_TV_LIBRARY = []  # keeps the torch.library.Library alive


def import_torchvision(need=None):
    """``import torchvision``; where its compiled library does not register its operator
    schemas (see `_TV_SCHEMAS`), they are defined and the import is tried once more. Defining
    them first would abort a working torchvision (0.29 registers them as its library loads,
    and a second registration is fatal in C++). ``need(module, why)`` imports or skips."""
    import importlib

    _torch()
    if not _TV_LIBRARY:
        try:
            importlib.import_module("torchvision")
        except RuntimeError as exc:
            if "torchvision::nms does not exist" not in str(exc):
                raise
            for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
                del sys.modules[name]  # the half-imported package, imported again below
            lib = _torch().library.Library("torchvision", "DEF")
            for name, schema in _TV_SCHEMAS.items():
                lib.define(name + schema)
            _TV_LIBRARY.append(lib)
        except ImportError:
            pass  # (no torchvision: need() skips, the plain import below raises)
    if need is not None:
        return need("torchvision", "pip install torchvision for the vision models")
    return importlib.import_module("torchvision")


def _vision(name, size=64, **kwargs):
    def build() -> Built:
        tv = import_torchvision()
        _torch()
        model = getattr(tv.models, name)(weights=None, **kwargs).eval()
        return Built(model, ["image"], ["logits"], {"image": {0: "batch"}, "logits": {0: "batch"}},
                     lambda b, t: [_rand(b * 100 + t)(b, 3, size, size)])
    return build


def _vit() -> Built:
    tv = import_torchvision()
    _torch()
    model = tv.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                        hidden_dim=32, mlp_dim=64, num_classes=10).eval()
    return Built(model, ["image"], ["logits"], {"image": {0: "batch"}, "logits": {0: "batch"}},
                 lambda b, t: [_rand(b * 100 + t)(b, 3, 32, 32)])


def _convnext() -> Built:
    import_torchvision()  # torchvision's own ConvNeXt classes are imported below
    _torch()
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    model = ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)],
                     num_classes=10).eval()
    return Built(model, ["image"], ["logits"], {"image": {0: "batch"}, "logits": {0: "batch"}},
                 lambda b, t: [_rand(b * 100 + t)(b, 3, 32, 32)])


VISION_BUILDERS = {
    "resnet18": _vision("resnet18"), "mobilenet_v2": _vision("mobilenet_v2"),
    "mobilenet_v3_small": _vision("mobilenet_v3_small"),
    "efficientnet_b0": _vision("efficientnet_b0"), "squeezenet1_1": _vision("squeezenet1_1"),
    "shufflenet_v2_x0_5": _vision("shufflenet_v2_x0_5"),
    "densenet121": _vision("densenet121"), "vit_small": _vit, "convnext_small": _convnext,
}


# -- transformers (small random configs, nothing downloaded) ------------------------------------
# hidden size 16 keeps the committed legacy exports of BERT and GPT-2 small (tens of KB)
def _text(kind):
    def build() -> Built:
        torch = _torch()
        import transformers as hf

        if kind == "bert":
            config = hf.BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=32,
                                   max_position_embeddings=32)
            net = hf.BertModel(config)
        elif kind == "distilbert":
            config = hf.DistilBertConfig(vocab_size=100, dim=16, n_layers=2, n_heads=2,
                                         hidden_dim=32, max_position_embeddings=32)
            net = hf.DistilBertModel(config)
        else:
            config = hf.GPT2Config(vocab_size=100, n_embd=16, n_layer=2, n_head=2,
                                   n_positions=32, bos_token_id=0, eos_token_id=0)
            net = hf.GPT2Model(config)
        net.config.use_cache = False
        net.config.return_dict = False

        class Wrapped(torch.nn.Module):
            """input_ids and attention_mask in, the last hidden state out."""

            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, input_ids, attention_mask):
                return self.net(input_ids=input_ids, attention_mask=attention_mask)[0]

        def inputs(b, t):
            rng = np.random.default_rng(b * 100 + t)
            mask = np.ones((b, t), np.int64)
            mask[0, t - 2:] = 0  # one padded row
            return [rng.integers(0, 100, (b, t)).astype(np.int64), mask]

        axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                "hidden": {0: "batch", 1: "seq"}}
        return Built(Wrapped().eval(), ["input_ids", "attention_mask"], ["hidden"], axes, inputs)
    return build


TEXT_BUILDERS = {"bert": _text("bert"), "distilbert": _text("distilbert"), "gpt2": _text("gpt2")}

#: models whose legacy exports and PyTorch outputs are committed in tests/fixtures/torch_onnx/
#: (tools/make_onnx_model_fixtures.py), so tests run them without torch: the torch.nn built-ins
#: and, for transformers' run-time sizes (Shape -> Gather multiplied into data, position ids
#: sliced to the sequence length), BERT and GPT-2
FIXTURE_BUILDERS = {**NN_BUILDERS, "bert": TEXT_BUILDERS["bert"], "gpt2": TEXT_BUILDERS["gpt2"]}
