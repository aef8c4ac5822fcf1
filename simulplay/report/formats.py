"""Tables as Markdown, LaTeX (booktabs) and CSV text; numbers formatted once, here.

Floats are printed with a fixed number of decimals per column (3 unless the table says
otherwise), so the Markdown, HTML and LaTeX copies show the same digits; the CSV keeps
full precision and one signature per row.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

import numpy as np
import pandas as pd

from simulplay.report.model import ReportTable

PANEL_COLUMNS = ("backend", "realization")
EMPTY = "—"
DEFAULT_DIGITS = {"threshold": 2, "u": 2}
LATEX_LONG = 40  # rows: longer tables become a longtable


def cell(value: Any, digits: int = 3) -> str:
    """One value as printed in every human-readable copy."""
    if value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return EMPTY
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        text = f"{float(value):.{digits}f}"
        return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"
    return str(value)


def is_numeric(series: pd.Series) -> bool:
    """Whether the column holds floats or integers (right-aligned in Markdown)."""
    return series.dtype.kind in "fiu"


def shown(table: ReportTable) -> tuple[pd.DataFrame, str]:
    """The columns a reader sees: panel columns with a single value move to a note."""
    df = table.frame
    drop, notes = [], []
    for col in PANEL_COLUMNS:
        if col in df and df[col].nunique(dropna=False) == 1 and len(df.columns) > 2:
            drop.append(col)
            notes.append(f"{col} {df[col].iloc[0]}")
    note = ("Panel: " + ", ".join(notes) + ".") if notes else ""
    return df.drop(columns=drop), note


def cells(table: ReportTable, df: pd.DataFrame) -> list[list[str]]:
    """The shown rows of ``df`` as strings: floats with the column's decimals (3 by default)."""
    digits = {**DEFAULT_DIGITS, **table.digits}
    cols = list(df.columns)
    return [[cell(v, digits.get(c, 3)) for c, v in zip(cols, row)] for row in df.itertuples(index=False)]


def caption(table: ReportTable) -> str:
    """The table's caption followed by the note on single-valued panel columns, if any."""
    _, note = shown(table)
    return " ".join(x for x in (table.caption, note) if x)


def heading(item) -> str:
    """``Table 2. Title`` for a numbered table or figure, else the title alone."""
    return f"{item.number}. {item.title}" if item.number else item.title


def markdown(table: ReportTable) -> str:
    """The table as a Markdown section: heading, caption, rows, then its signature lines."""
    df, _ = shown(table)
    esc = [c.replace("|", "\\|") for c in (table.label(c) for c in df.columns)]
    align = ["---:" if is_numeric(df[c]) else "---" for c in df.columns]
    lines = [f"### {heading(table)}", "", caption(table), "",
             "| " + " | ".join(esc) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in cells(table, df)]
    lines.append("")
    lines += [f"**Note:** {n}  " for n in table.notes]
    lines += [f"Signature: `{s}`  " for s in table.lines]
    return "\n".join(lines) + "\n"


def csv_text(table: ReportTable) -> str:
    """The table as CSV at full precision, with a ``signature`` column (one per row) and a
    ``signature[NAME]`` column for each extra set."""
    out = table.frame.copy()
    out["signature"] = table.signatures
    for name, sigs in table.extra_signatures.items():
        out[f"signature[{name}]"] = sigs
    buf = io.StringIO()
    out.to_csv(buf, index=False)
    return buf.getvalue()


LATEX_CHARS = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
               "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
               "δ": r"$\delta$", "η": r"$\eta$", "Δ": r"$\Delta$", "−": r"$-$", "≤": r"$\leq$", "·": r"$\cdot$",
               "₁": r"$_1$", "–": "--", "<": r"$<$", ">": r"$>$", "…": r"\dots{}", "’": "'", "—": "---"}


def latex_escape(text: str) -> str:
    """Text safe for LaTeX; Greek letters and math signs become inline math (adjacent
    math spans merged)."""
    out = "".join(LATEX_CHARS.get(ch, ch) for ch in str(text))
    return re.sub(r"(?<!\\)\$\$", "", out)


def _latex_cell(text: str, numeric: bool) -> str:
    if numeric and text.startswith("-"):
        return "$-$" + text[1:]
    return latex_escape(text)


def latex(table: ReportTable) -> str:
    """A booktabs table (a longtable when long) with its signature under it."""
    df, _ = shown(table)
    numeric = [is_numeric(df[c]) for c in df.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    head = " & ".join(latex_escape(table.label(c)) for c in df.columns) + r" \\"
    body = [" & ".join(_latex_cell(v, n) for v, n in zip(row, numeric)) + r" \\" for row in cells(table, df)]
    cap = latex_escape(f"{table.title}. {caption(table)}")  # LaTeX numbers the table itself
    label = f"tab:simulplay-{table.key}"
    sig = "\n".join([r"\textbf{Note:} " + latex_escape(n) + r"\par" for n in table.notes]
                    + [r"Signature: \texttt{" + latex_escape(s).replace("|", r"|\allowbreak{}") + r"}\par"
                       for s in table.lines])
    comments = [f"% {heading(table)} (simulplay report)"] + [f"% Signature: {s}" for s in table.lines]
    if len(df) > LATEX_LONG:
        lines = comments + [rf"\begin{{longtable}}{{{spec}}}", rf"\caption{{{cap}}}\label{{{label}}}\\",
                            r"\toprule", head, r"\midrule", r"\endfirsthead", r"\toprule", head, r"\midrule",
                            r"\endhead", r"\bottomrule", r"\endfoot", *body,
                            r"\end{longtable}", r"{\scriptsize\raggedright " + sig + "}"]
    else:
        lines = comments + [r"\begin{table}[htbp]", r"\centering", r"\small", rf"\caption{{{cap}}}",
                            rf"\label{{{label}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule", head, r"\midrule",
                            *body, r"\bottomrule", r"\end{tabular}", r"\par\smallskip",
                            r"{\scriptsize\raggedright " + sig + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"
