"""Independent numpy formulas, one per op, written apart from the kernels they check.

Each module here defines ``REFERENCES = {op_name: fn}``, where ``fn(*args, **params)`` takes the
sample's numpy arrays and returns the expected array (or tuple of arrays).
"""
import importlib
import pkgutil

REFERENCES = {}
for _info in pkgutil.iter_modules(__path__):
    REFERENCES.update(importlib.import_module(f"{__name__}.{_info.name}").REFERENCES)
