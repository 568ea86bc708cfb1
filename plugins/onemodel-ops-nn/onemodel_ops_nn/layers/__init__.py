"""The layer classes behind ``om.nn.<Layer>`` (registered by ``module_hooks.onemodel_modules``)."""
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .basic import (GELU, Dropout, Embedding, Flatten, Identity, Linear, LogSoftmax, ModuleList,
                    ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .conv import AvgPool2d, Conv2d, MaxPool2d
from .loss import CrossEntropyLoss, CTCLoss, MSELoss
from .norm import BatchNorm2d, LayerNorm
from .rnn import GRU, LSTM
from .activation import (ELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
                         Mish, PReLU, ReLU6, SiLU, Softplus, Softsign)
from .containers import ModuleDict, ParameterDict, ParameterList
from .conv_more import Conv1d, ConvTranspose1d, ConvTranspose2d
from .dropout_more import Dropout1d, Dropout2d
from .loss_more import (BCELoss, BCEWithLogitsLoss, HuberLoss, KLDivLoss, L1Loss, NLLLoss,
                        SmoothL1Loss)
from .norm_more import BatchNorm1d, GroupNorm, InstanceNorm1d, InstanceNorm2d, RMSNorm
from .pad import (ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                  ReplicationPad1d, ReplicationPad2d, ZeroPad2d)
from .pool_more import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool1d,
                        MaxPool1d)
from .resize import PixelShuffle, PixelUnshuffle, Upsample
from .shape import Unflatten
from .bilinear import Bilinear
from .embedding_bag import EmbeddingBag
from .rnn_cells import GRUCell, LSTMCell, RNNCell
from .rnn_elman import RNN
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer

LAYERS = (Linear, Conv2d, MaxPool2d, AvgPool2d, BatchNorm2d, LayerNorm, Embedding, Dropout, ReLU,
          GELU, Sigmoid, Tanh, Softmax, LogSoftmax, Flatten, Identity, Sequential, ModuleList,
          MultiheadAttention, TransformerEncoderLayer, TransformerEncoder, MSELoss,
          CrossEntropyLoss, CTCLoss, LSTM, GRU)
# issue 24: more layers, containers and losses
LAYERS += (Conv1d, ConvTranspose1d, ConvTranspose2d, MaxPool1d, AvgPool1d, AdaptiveAvgPool1d,
           AdaptiveAvgPool2d, AdaptiveMaxPool2d, Upsample, PixelShuffle, PixelUnshuffle,
           BatchNorm1d, GroupNorm, InstanceNorm1d, InstanceNorm2d, RMSNorm, LeakyReLU, SiLU, ELU,
           SELU, Softplus, Mish, Hardswish, Hardsigmoid, PReLU, GLU, ReLU6, Hardtanh, Softsign,
           LogSigmoid, Dropout1d, Dropout2d, Unflatten, ZeroPad2d, ConstantPad1d, ConstantPad2d,
           ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, ModuleDict,
           ParameterList, ParameterDict, BCELoss, BCEWithLogitsLoss, NLLLoss, L1Loss,
           SmoothL1Loss, HuberLoss, KLDivLoss)
LAYERS += (RNN, RNNCell, LSTMCell, GRUCell, TransformerDecoderLayer, TransformerDecoder,
           Transformer, EmbeddingBag, Bilinear)

__all__ = [cls.__name__ for cls in LAYERS] + ["LAYERS"]
