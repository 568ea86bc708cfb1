"""PyTorch's name for each nn op (`OpDef.torch`), curated by hand and attached in plugin.py.

Mostly ``torch.nn.functional`` (``F.``) under the same name; ``log_sigmoid`` is
``F.logsigmoid``, the recurrent ops are the layers' (``torch.nn.LSTM``) since torch exposes no
functional form. None: torch has no such op (the fusing passes' ops, ONNX's Resize)."""
from __future__ import annotations

_SAME = ("adaptive_avg_pool1d adaptive_avg_pool2d adaptive_max_pool2d avg_pool1d avg_pool2d "
         "batch_norm binary_cross_entropy binary_cross_entropy_with_logits conv1d conv2d "
         "conv_transpose1d conv_transpose2d cosine_similarity cross_entropy ctc_loss dropout elu "
         "embedding gelu glu grid_sample group_norm hardsigmoid hardswish hardtanh huber_loss instance_norm "
         "interpolate kl_div l1_loss layer_norm leaky_relu linear log_softmax max_pool1d "
         "max_pool2d mish mse_loss nll_loss normalize pixel_shuffle pixel_unshuffle prelu relu6 "
         "rms_norm scaled_dot_product_attention selu silu smooth_l1_loss softmax softplus "
         "softsign").split()

TORCH = {
    **{name: f"F.{name}" for name in _SAME},
    "log_sigmoid": "F.logsigmoid",
    "lstm": "torch.nn.LSTM", "gru": "torch.nn.GRU",
    "tril": "torch.tril", "triu": "torch.triu",
    "fused_conv2d": None, "fused_linear": None,
    "resize": None,  # ONNX's Resize in every mode; torch's modes are F.interpolate's
}
