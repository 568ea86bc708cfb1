"""Write csrc/om_program.h from the instruction table (onemodel_backend_compiled/instructions.py),
the one source of truth for opcodes, field counts and the VM's opcodes.

Run from the repository root after changing the table::

    .venv/bin/python plugins/onemodel-backend-compiled/tools/gen_program_header.py [--check]

``--check`` writes nothing and exits 1 when the committed header differs (tests/test_instructions.py
checks the same); rebuild the extension after a change (``pip install -e`` of the plugin).
"""
from __future__ import annotations

import os
import sys

from onemodel_backend_compiled import instructions

HEADER = os.path.join(os.path.dirname(os.path.abspath(instructions.__file__)), "csrc",
                      "om_program.h")


def main(argv: list[str]) -> int:
    text = instructions.header_text()
    with open(HEADER, encoding="utf-8") as f:
        current = f.read()
    if "--check" in argv:
        if current != text:
            print(f"{os.path.relpath(HEADER)} differs from the instruction table; run "
                  f"{os.path.basename(__file__)}", file=sys.stderr)
            return 1
        return 0
    if current != text:
        tmp = HEADER + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, HEADER)  # atomic: a build never reads half a header
        print(f"wrote {os.path.relpath(HEADER)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
