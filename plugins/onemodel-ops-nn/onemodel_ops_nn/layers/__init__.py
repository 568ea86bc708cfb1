"""The layer classes behind ``om.nn.<Layer>`` (registered by ``module_hooks.onemodel_modules``)."""
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .basic import (GELU, Dropout, Embedding, Flatten, Identity, Linear, LogSoftmax, ModuleList,
                    ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .conv import AvgPool2d, Conv2d, MaxPool2d
from .loss import CrossEntropyLoss, CTCLoss, MSELoss
from .norm import BatchNorm2d, LayerNorm
from .rnn import GRU, LSTM

LAYERS = (Linear, Conv2d, MaxPool2d, AvgPool2d, BatchNorm2d, LayerNorm, Embedding, Dropout, ReLU,
          GELU, Sigmoid, Tanh, Softmax, LogSoftmax, Flatten, Identity, Sequential, ModuleList,
          MultiheadAttention, TransformerEncoderLayer, TransformerEncoder, MSELoss,
          CrossEntropyLoss, CTCLoss, LSTM, GRU)

__all__ = [cls.__name__ for cls in LAYERS] + ["LAYERS"]
