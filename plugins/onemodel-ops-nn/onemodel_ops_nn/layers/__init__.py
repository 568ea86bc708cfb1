"""The layer classes behind ``om.nn.<Layer>`` (registered by ``module_hooks.onemodel_modules``)."""
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .basic import (GELU, Dropout, Embedding, Flatten, Identity, Linear, LogSoftmax, ModuleList,
                    ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .conv import AvgPool2d, Conv2d, MaxPool2d
from .loss import CrossEntropyLoss, CTCLoss, MSELoss
from .norm import BatchNorm2d, LayerNorm
from .rnn import GRU, LSTM
from .bilinear import Bilinear
from .embedding_bag import EmbeddingBag
from .rnn_cells import GRUCell, LSTMCell, RNNCell
from .rnn_elman import RNN
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer

LAYERS = (Linear, Conv2d, MaxPool2d, AvgPool2d, BatchNorm2d, LayerNorm, Embedding, Dropout, ReLU,
          GELU, Sigmoid, Tanh, Softmax, LogSoftmax, Flatten, Identity, Sequential, ModuleList,
          MultiheadAttention, TransformerEncoderLayer, TransformerEncoder, MSELoss,
          CrossEntropyLoss, CTCLoss, LSTM, GRU)
LAYERS += (RNN, RNNCell, LSTMCell, GRUCell, TransformerDecoderLayer, TransformerDecoder,
           Transformer, EmbeddingBag, Bilinear)

__all__ = [cls.__name__ for cls in LAYERS] + ["LAYERS"]
