"""Run every ONNX backend node test through the OneModel ONNX import and print
(or write into docs/onnx.md) the pass counts, per-op rates and the refusals grouped by reason.

    python tools/onnx_conformance_report.py                 # print the Markdown report
    python tools/onnx_conformance_report.py --write docs/onnx.md
    python tools/onnx_conformance_report.py --backend numpy
    python tools/onnx_conformance_report.py --pin            # add new passes to the pinned list

``--write`` replaces the text between ``<!-- conformance:begin -->`` and
``<!-- conformance:end -->`` in the given file. The cases and the way they run are those of
tests/test_onnx_conformance.py (tests/onnx_cases.py).
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"


def collect(backend: str | None):
    from tests.onnx_cases import (KNOWN_FAILURES, Refused, Skip, base_op, load_cases, run_case,
                                  third_party_claims)

    results = collections.defaultdict(list)  # op -> [(case, status, detail)]
    for case in load_cases():
        op = base_op(case)
        foreign = third_party_claims(case.op_types)
        if foreign:  # the report and the pins are the project's own
            results[op].append((case.name, "skip", "reads third-party import rules: "
                                + ", ".join(foreign)))
            continue
        try:
            run_case(case, backend=backend)
            status, detail = ("pass", "")
        except Skip as exc:
            status, detail = "skip", str(exc)
        except Refused as exc:
            status, detail = "refused", str(exc)
        except Exception as exc:  # noqa: BLE001
            first = str(exc).strip().splitlines()
            status = "known failure" if case.name in KNOWN_FAILURES else "FAIL"
            detail = KNOWN_FAILURES.get(case.name) or f"{type(exc).__name__}: " \
                                                      f"{first[0] if first else ''}"
        results[op].append((case.name, status, detail))
    return results


#: the op types docs/onnx.md listed as claimed when issue 16 was filed (its conformance target is
#: stated over their node tests); kept fixed so the figure stays comparable
ISSUE16_OP_TYPES = frozenset("""Abs Add And ArgMax AveragePool BatchNormalization Cast CastLike Clip
Concat Constant ConstantOfShape Conv Div Dropout Equal Erf Exp Expand Flatten Gather
GatherElements Gelu Gemm GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual Identity
LayerNormalization Less LessOrEqual Log LogSoftmax MatMul Max MaxPool Min Mul Neg Not Or Pow Range
Reciprocal ReduceMax ReduceMean ReduceMin ReduceSum Relu Reshape Shape Sigmoid Size Slice Softmax
Split Sqrt Squeeze Sub Sum Tanh Transpose Unsqueeze Where Xor""".split())


def onnxruntime_results() -> dict:
    """case name -> "pass", "wrong" or "error: ..." for ONNX Runtime's CPU provider on the same
    cases, inputs and tolerances (empty when onnxruntime is not installed)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return {}
    import numpy as np

    from tests.onnx_cases import _array, load_cases

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    out = {}
    for case in load_cases():
        try:
            sess = ort.InferenceSession(case.model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])
            names = [i.name for i in sess.get_inputs()]
            ok = True
            for inputs, expected in case.data_sets:
                got = sess.run(None, {n: _array(a) for n, a in zip(names, inputs)})
                for g, w in zip(got, expected):
                    w, g = _array(w), np.asarray(g)
                    if g.shape != w.shape or g.dtype != w.dtype:
                        ok = False
                    elif w.dtype.kind in "fc":
                        ok &= bool(np.allclose(g, w, rtol=case.rtol, atol=case.atol,
                                               equal_nan=True))
                    else:
                        ok &= g.tolist() == w.tolist()
            out[case.name] = "pass" if ok else "wrong"
        except Exception as exc:  # noqa: BLE001 - a refusal or a crash: not a pass
            out[case.name] = f"error: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    return out


def _unfed(status: str) -> bool:
    """ONNX Runtime's Python API refused the test's numpy input (not a failure of its kernels)."""
    return status.startswith("error: ") and ("Numpy_type" in status
                                             or "No corresponding Numpy type" in status)


def issue16_lines(results, ort: dict) -> list[str]:
    """Pass counts over the node tests of ISSUE16_OP_TYPES, ours beside ONNX Runtime's."""
    rows = [(n, s) for op, rs in results.items() if op in ISSUE16_OP_TYPES for n, s, _ in rs]
    lines = []
    for label, keep in (("`_expanded` variants included", lambda n: True),
                        ("without `_expanded` variants", lambda n: "_expanded" not in n)):
        sel = [(n, s) for n, s in rows if keep(n)]
        ours = sum(s == "pass" for _, s in sel)
        wrong = sum(s in ("FAIL", "known failure") for _, s in sel)
        unfed = sum(_unfed(ort.get(n, "")) for n, _ in sel)
        theirs = (f"ONNX Runtime {sum(ort.get(n) == 'pass' for n, _ in sel)} ({unfed} of its "
                  f"failures are inputs its Python API cannot take: float8, int4, int2...)"
                  if ort else "ONNX Runtime not installed")
        lines.append(f"  * {label}: {len(sel)} cases; OneModel **{ours} pass**, {wrong} wrong; "
                     f"{theirs}.")
    return lines


def _reason(detail: str) -> str:
    """Group skip reasons: drop node names and numbers so similar cases share one line."""
    d = re.sub(r"\S+ node( '[^']*')? \(outputs [^)]*\): ", "", detail)
    d = re.sub(r"^unsupported: ", "", d)
    d = re.sub(r"(input|tensor) '[^']*' has dtype \S+, which OneModel does not support",
               "a dtype OneModel does not have (bfloat16, float8, int4, string...)",
               d)
    d = re.sub(r"Cast to ONNX type \d+ is not supported",
               "a cast to a dtype OneModel does not have", d)
    d = re.sub(r"input '[^']*'", "an input", d)
    d = re.sub(r"\[[\d, ]+\]", "[...]", d)
    d = re.sub(r"u8\[[^\]]*\]", "u8", d)
    return d


def _ort_version() -> str:
    try:
        import onnxruntime
    except ImportError:
        return "(not installed)"
    return onnxruntime.__version__


def render(results, backend: str, ort: dict | None = None) -> str:
    import onnx

    ort = ort or {}

    from tests.onnx_cases import project_claimed_op_types

    claimed = project_claimed_op_types()
    ours = {op: rows for op, rows in results.items() if op in claimed}
    every = [r for rows in results.values() for r in rows]
    mine = [r for rows in ours.values() for r in rows]

    def count(rows, status):
        return sum(1 for _, s, _ in rows if s == status)

    def wrong(rows):
        return count(rows, "FAIL") + count(rows, "known failure")

    lines = [f"Generated by `tools/onnx_conformance_report.py` with onnx {onnx.__version__} "
             f"(backend `{backend}`). Every input is fed at run time, as ONNX Runtime feeds it; "
             f"a case is refused when the import claims its op types but not an attribute, "
             f"mode, dtype or run-time input it uses, and not claimed when it uses an op type "
             f"nothing claims (an `_expanded` body using `Loop`...).", "",
             f"* **Op types we claim** (the case's own op is claimed, `_expanded` variants "
             f"included): **{count(mine, 'pass')} of {len(mine)} pass**, "
             f"{count(mine, 'refused')} refused, {count(mine, 'skip')} not claimed, "
             f"{wrong(mine)} wrong.",
             f"* **Every node test onnx ships**: {count(every, 'pass')} of {len(every)} pass, "
             f"{count(every, 'refused')} refused, {count(every, 'skip')} not claimed, "
             f"{wrong(every)} wrong"
             + (f" (ONNX Runtime {sum(v == 'pass' for v in ort.values())})." if ort else "."),
             f"* **The op types listed when issue 16 was filed** ({len(ISSUE16_OP_TYPES)} types, "
             f"`ISSUE16_OP_TYPES`), the same cases run by ONNX Runtime {_ort_version()} "
             f"(CPU) with the same inputs and tolerances:",
             *issue16_lines(results, ort), "",
             "| ONNX op | cases | passed | refused | not claimed | wrong | pass rate |",
             "|---|---|---|---|---|---|---|"]
    for op in sorted(ours):
        rows = ours[op]
        lines.append(f"| {op} | {len(rows)} | {count(rows, 'pass')} | {count(rows, 'refused')} | "
                     f"{count(rows, 'skip')} | {wrong(rows)} | "
                     f"{100 * count(rows, 'pass') / len(rows):.0f}% |")
    lines += ["", "### Wrong results", ""]
    fails = [(op, n, s, d) for op in sorted(results) for n, s, d in results[op]
             if s in ("FAIL", "known failure")]
    lines += [f"- `{n}` ({op}, {s}): {d}" for op, n, s, d in fails] or ["None."]
    lines += ["", "### Refusals by reason", "",
              "Cases of claimed op types that the import refuses:", ""]
    reasons = collections.defaultdict(list)
    for op in sorted(ours):
        for n, s, d in ours[op]:
            if s == "refused":
                reasons[(op, _reason(d))].append(n)
    for (op, r), names in sorted(reasons.items()):
        lines.append(f"- {op}: {r} ({len(names)} case{'s' if len(names) != 1 else ''})")
    unclaimed = collections.Counter()
    for op, rows in results.items():
        if op not in claimed:
            unclaimed[op] += len(rows)
    lines += ["", "### Op types nothing claims", "",
              f"{sum(unclaimed.values())} cases of {len(unclaimed)} op types: "
              + ", ".join(f"{op} ({k})" for op, k in sorted(unclaimed.items())) + "."]
    return "\n".join(lines) + "\n"


def pin(results, path: str) -> int:
    """Add every passing case to the pinned list (it only grows); returns how many were new."""
    from tests.onnx_cases import passing

    old = passing()
    new = {n for rows in results.values() for n, s, _ in rows if s == "pass"}
    with open(path, "w", encoding="utf-8") as f:
        f.write("# ONNX backend node tests that pass (tests/test_onnx_conformance.py); add, never "
                "remove.\n# Regenerate: python tools/onnx_conformance_report.py --pin\n")
        f.writelines(f"{n}\n" for n in sorted(old | new))
    return len(new - old)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numpy",
                    help="session backend ('none' for the reference interpreter)")
    ap.add_argument("--write", metavar="FILE", help="replace the conformance section of FILE")
    ap.add_argument("--pin", action="store_true",
                    help="add the passing cases to tests/onnx_passing.txt")
    args = ap.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")
    backend = None if args.backend == "none" else args.backend
    results = collect(backend)
    text = render(results, args.backend, onnxruntime_results())
    if args.pin:
        from tests.onnx_cases import PASSING_FILE

        print(f"pinned {pin(results, PASSING_FILE)} new passing case(s)", file=sys.stderr)
    if args.write:
        with open(args.write, encoding="utf-8") as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc:
            raise SystemExit(f"{args.write} has no {BEGIN} ... {END} section")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(f"{head}{BEGIN}\n{text}{END}{tail}")
    else:
        sys.stdout.write(text)
    return 1 if any(s == "FAIL" for rows in results.values() for _, s, _ in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
