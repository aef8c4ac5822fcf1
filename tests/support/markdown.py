"""Reading back the Markdown a report writes."""

from __future__ import annotations

import re


def md_table(md: str, heading: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the first Markdown table after ``heading``."""
    lines = md[md.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows[0], [r for r in rows[2:]]
