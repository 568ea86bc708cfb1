"""Plain-text and Markdown tables for the command line."""
from __future__ import annotations


def render(headers: list[str], rows: list[list[str]], markdown: bool = False) -> str:
    rows = [[str(c) for c in r] for r in rows]
    if markdown:
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r) for r in rows]
    return "\n".join(line.rstrip() for line in out)
