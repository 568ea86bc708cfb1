"""``om.optim``: optimizers updating parameters in place from their ``.grad``, and
``om.optim.lr_scheduler``."""
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer, OptimizerError
from .rmsprop import RMSprop
from .sgd import SGD
from . import lr_scheduler  # noqa: E402  (schedulers build on Optimizer)

__all__ = ["Optimizer", "OptimizerError", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
           "lr_scheduler"]
