"""The help formatter of every command: prose is wrapped to the terminal; examples and lists
(a paragraph with an indented line or a heading ending in a colon) keep their lines."""
from __future__ import annotations

import argparse
import re


class HelpFormatter(argparse.HelpFormatter):
    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in re.split(r"\n\s*\n", text.strip("\n")):
            lines = para.splitlines()
            if any(ln[:1].isspace() for ln in lines) or lines[0].rstrip().endswith(":"):
                out.append("\n".join(indent + ln for ln in lines))
            else:
                out.append(super()._fill_text(" ".join(ln.strip() for ln in lines), width,
                                              indent))
        return "\n\n".join(out) + "\n"
