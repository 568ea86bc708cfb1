"""``om.optim``: optimizers updating parameters in place from their ``.grad``."""
from .adam import Adam, AdamW
from .optimizer import Optimizer, OptimizerError
from .sgd import SGD

__all__ = ["Optimizer", "OptimizerError", "SGD", "Adam", "AdamW"]
