"""Hostile plan-cache entries (issue 22): an entry rewritten with its CRCs recomputed, so that
only plan_check stands between it and the native executor. For an MLP, a CNN, a transformer, an
LSTM + GRU and a fused LSTM (batch 16) that together emit every instruction kind, every address
and size field of the first
instruction of each kind, the VM's registers, the arena's size, and a plan stored for batch 512
under a small batch's key are rewritten with hostile values (out of range, negative, huge,
2^62, one past the end of its buffer) and loaded and run in a forked child (hostile_entries.py):
the result must be right (the entry was refused and the plan rebuilt, or the change was
harmless) or a OneModelError; never a signal, a hang, a raw MemoryError or a wrong number."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import pytest
from onemodel_backend_compiled import plan_check, plan_codec
from onemodel_backend_compiled import program as P

from onemodel.errors import OneModelError

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("mlp", "cnn", "transformer", "rnn", "rnn_fused")
SAFE = {"refused", "harmless", "error"}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Each model's sweep in its own process and cache folder, the three at once."""
    root = tmp_path_factory.mktemp("hostile")
    procs = {}
    for name in MODELS:
        env = dict(os.environ, ONEMODEL_CACHE_DIR=str(root / name))
        env.pop("ONEMODEL_CACHE", None)
        procs[name] = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "hostile_entries.py"), name,
             str(root / f"{name}.json")], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
    out = {}
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        out[name] = json.loads((root / f"{name}.json").read_text())
    return out


@pytest.mark.parametrize("name", MODELS)
def test_no_hostile_entry_crashes_hangs_or_gives_a_wrong_number(sweeps, name):
    results = sweeps[name]["results"]
    bad = [(what, outcome) for what, outcome in results if outcome not in SAFE]
    assert not bad, f"{len(bad)} of {len(results)}: {bad[:20]}"
    counts = collections.Counter(outcome for _, outcome in results)
    # the sweep really tampers: nearly every value is refused (only fields that do not matter
    # here, a stride over a dimension of one, say, are harmless)
    assert counts["refused"] >= 0.9 * len(results), counts
    outcome = dict((what[0], o) for what, o in results if what[1] is None)
    assert outcome["unchanged"] == "harmless"  # the good entry is loaded, not refused
    assert outcome[next(k for k in outcome if k.startswith("batch 512"))] == "refused"


@pytest.mark.parametrize("name", MODELS)
def test_arena_sizes_are_refused_before_allocation(sweeps, name):
    arena = {what[4]: o for what, o in sweeps[name]["results"] if what[0] == "arena"}
    for peak in ("1000000000000", "1000000000000.0", "inf", "nan", "-1", "4611686018427387904"):
        assert arena[peak] == "refused", (peak, arena)


def test_every_instruction_kind_is_swept(sweeps):
    """A new instruction kind must join the sweep (a model here that emits it, and its field
    kinds in hostile_entries.KINDS) and plan_check.CHECKS."""
    swept = {op for s in sweeps.values() for op in s["kinds"]}
    assert set(P.NAMES) - {P.I_FAIL} <= swept, sorted(set(P.NAMES) - swept)
    assert set(P.NAMES) <= set(plan_check.CHECKS)


def test_an_unsafe_plan_is_a_bad_entry_and_a_onemodel_error():
    assert issubclass(plan_check.UnsafePlan, plan_codec.BadEntry)
    assert issubclass(plan_check.UnsafePlan, OneModelError)
