"""The entry point: one hook, one record per op."""
from onemodel.registry import hookimpl

from .rms_norm import RMS_NORM
from .swish import SWISH


@hookimpl
def onemodel_ops():
    return (RMS_NORM, SWISH)
