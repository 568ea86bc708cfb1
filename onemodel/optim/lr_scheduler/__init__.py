"""``om.optim.lr_scheduler``: PyTorch's learning-rate schedules, with its step order, its
chained (recursive) and closed forms, its warnings and its ``state_dict`` layout.

A scheduler changes ``group["lr"]`` of its optimizer's param groups. The chained form (each
step from the current lr) is what ``step()`` uses, so schedulers can be stacked; the closed
form (from ``initial_lr`` and the epoch) is what ``step(epoch)`` uses, as in torch.
"""
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, SchedulerError
from .combined import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR, OneCycleLR
from .decay import (ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR,
                    PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "SchedulerError", "EPOCH_DEPRECATION_WARNING", "LambdaLR",
           "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "OneCycleLR", "CyclicLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]
