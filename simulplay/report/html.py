"""The self-contained HTML report: inline CSS, figures embedded as base64 PNG, no
script and no request leaving the report folder (the Listen section's audio elements
play files of its audio/ folder by relative path).

Layout at a glance: the page is up to 1240 px wide (prose stays at a readable measure);
a table never needs a horizontal scrollbar at 1280 px: numbers never wrap, text cells
and headers may (rule strings, paths and signatures break after ``, : / = |``), and a
table whose columns would still not fit is split into parts that each repeat its text
columns (:func:`column_groups`). On a narrow screen (a phone) a table that cannot fit
scrolls sideways inside its own box. Figures are PNGs at twice the pixels they are shown
at (sharp on high-density screens).
"""

from __future__ import annotations

import base64
import re
from html import escape
from urllib.parse import quote

from simulplay.report.figures import PIXEL_RATIO
from simulplay.report.formats import caption, cells, heading, shown
from simulplay.report.model import ReportAudio, ReportFigure, ReportTable

CSS = """
:root{--fg:#1d232b;--muted:#5b6673;--line:#d8dee6;--bg:#fff;--head:#f3f5f8}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:1240px;margin:0 auto;padding:1rem 1.25rem}
h1{font-size:1.45rem;margin:.5rem 0}
h2{font-size:1.15rem;margin:2rem 0 .4rem;padding-top:.6rem;border-top:1px solid var(--line)}
p,nav,.notes{max-width:62rem}
p{margin:.4rem 0}
.caption{color:var(--muted);font-size:.9rem}
.part{color:var(--muted);font-size:.78rem;margin:.6rem 0 0}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0;border:1px solid var(--line);border-radius:4px}
table{border-collapse:collapse;font-size:.8rem;font-variant-numeric:tabular-nums;min-width:100%}
th,td{padding:.28rem .5rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--head);position:sticky;top:0;font-weight:600}
td{white-space:normal}
td.num{white-space:nowrap}
td.num,th.num{text-align:right}
tr:last-child td{border-bottom:0}
figure{margin:1rem 0}
figure img{display:block;max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px}
figcaption{color:var(--muted);font-size:.9rem;margin-top:.4rem;max-width:62rem}
.sig{font-size:.72rem;color:var(--muted);overflow-wrap:anywhere;word-break:break-all;max-width:none}
.sig code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
nav ol{padding-left:1.6rem;columns:2 16rem;column-gap:3rem;font-size:.9rem}
nav li{break-inside:avoid}
.notes li{color:#7a4b00}
.note{color:#7a4b00;font-size:.9rem}
"""

#: Estimated widths for splitting a table (px at the table's 12.8 px font): a character,
#: a cell's horizontal padding and border, and the width one table may take at 1280 px.
CHAR_PX, CELL_PX, TABLE_PX = 7.4, 17.0, 1150.0
_BREAK_AFTER = re.compile(r"([,:/=|])(?=\S)")


def breakable(text: str) -> str:
    """Escaped text with a line-break opportunity (``<wbr>``) after ``, : / = |`` inside a word."""
    return _BREAK_AFTER.sub(r"\1<wbr>", escape(text))


def _min_chars(text: str, numeric: bool) -> int:
    """Characters of a cell's widest unbreakable piece (numbers never break)."""
    if numeric:
        return len(text)
    return max((len(p) for p in re.split(r"\s+|(?<=[,:/=|])", text) if p), default=0)


def column_groups(labels: list[str], rows: list[list[str]], numeric: list[bool],
                  budget: float = TABLE_PX) -> list[list[int]]:
    """Column indices of each part of a table: all columns when their estimated minimum
    widths fit ``budget`` (px), else the text columns repeated in every part and the
    numeric columns dealt out in order so that each part fits."""
    widths = []
    for j, (lab, num) in enumerate(zip(labels, numeric)):
        need = max([_min_chars(w, False) for w in lab.split()] + [_min_chars(r[j], num) for r in rows] + [1])
        widths.append(need * CHAR_PX + CELL_PX)
    if sum(widths) <= budget:
        return [list(range(len(labels)))]
    keys = [j for j, n in enumerate(numeric) if not n]
    base = sum(widths[j] for j in keys)
    groups: list[list[int]] = []
    current: list[int] = []
    for j in (j for j, n in enumerate(numeric) if n):
        if current and base + sum(widths[k] for k in current) + widths[j] > budget:
            groups.append(current)
            current = []
        current.append(j)
    groups.append(current)
    return [sorted(keys + g) for g in groups]


def _table(table: ReportTable) -> str:
    df, _ = shown(table)
    numeric = [df[c].dtype.kind in "fiu" for c in df.columns]
    labels = [table.label(c) for c in df.columns]
    rows = cells(table, df)
    groups = column_groups(labels, rows, numeric)
    out = []
    for i, cols in enumerate(groups):
        if len(groups) > 1:
            out.append(f'<p class="part">Part {i + 1} of {len(groups)} (the table is split to fit the page; '
                       "text columns repeat)</p>")
        head = "".join(f'<th scope="col"{" class=num" if numeric[j] else ""}>{breakable(labels[j])}</th>'
                       for j in cols)
        body = "".join("<tr>" + "".join(f'<td{" class=num" if numeric[j] else ""}>{breakable(r[j])}</td>'
                                        for j in cols) + "</tr>" for r in rows)
        out.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')
    return "".join(out)


def _signatures(lines: list[str]) -> str:
    return "".join(f'<p class="sig">Signature: <code>{escape(s)}</code></p>' for s in lines)


def _section_table(table: ReportTable) -> str:
    return (f'<section id="{table.key}"><h2>{escape(heading(table))}</h2>'
            f'<p class="caption">{escape(caption(table))}</p>{_table(table)}{_notes(table.notes)}'
            f'{_signatures(table.lines)}</section>')


def _notes(notes: list[str]) -> str:
    return "".join(f'<p class="note"><strong>Note:</strong> {escape(n)}</p>' for n in notes)


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels from a PNG's IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _section_figure(fig: ReportFigure) -> str:
    width, height = png_size(fig.png)
    data = base64.b64encode(fig.png).decode("ascii")
    return (f'<section id="{fig.key}"><h2>{escape(heading(fig))}</h2><figure>'
            f'<img src="data:image/png;base64,{data}" width="{round(width / PIXEL_RATIO)}" '
            f'height="{round(height / PIXEL_RATIO)}" alt="{escape(heading(fig))}">'
            f"<figcaption>{escape(fig.caption)}</figcaption></figure>{_signatures(fig.lines)}</section>")


def _section_audio(item: ReportAudio) -> str:
    """Audio elements with relative sources (files of the report folder), then the table."""
    clips = "".join(f'<figure><figcaption>{escape(c.label)}</figcaption><audio controls preload="metadata" '
                    f'src="{escape(quote(c.file))}" data-duration="{c.duration_s:.6f}" '
                    f'style="width:100%;max-width:32rem">'
                    f'<a href="{escape(quote(c.file))}">{escape(c.file)}</a></audio></figure>' for c in item.clips)
    return (f'<section id="{item.key}"><h2>{escape(heading(item))}</h2><p class="caption">{escape(item.caption)}</p>'
            f"{clips}{_table(item.table)}{_signatures(item.lines)}</section>")


def _section(item) -> str:
    if isinstance(item, ReportTable):
        return _section_table(item)
    if isinstance(item, ReportAudio):
        return _section_audio(item)
    return _section_figure(item)


def _link(link: tuple[str, str] | None) -> str:
    if link is None:
        return ""
    href, text = link
    return f'<p class="explore"><a href="{escape(quote(href, safe="/:.#"))}">{escape(text)}</a></p>'


def page(title: str, intro: str, items: list, notes: list[str], link: tuple[str, str] | None = None,
         result: str = "") -> str:
    """The whole document; ``items`` are tables and figures in report order; ``link``: a
    relative address and its sentence, shown under the intro (the explorer); ``result``: the
    one-sentence reading of the result, shown first."""
    toc = "".join(f'<li><a href="#{i.key}">{escape(heading(i))}</a></li>' for i in items)
    body = []
    for item in items:
        body.append(_section(item))
    note_html = ("<section id=\"notes\"><h2>Notes</h2><ul class=\"notes\">"
                 + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul></section>") if notes else ""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><link rel=\"icon\" href=\"data:,\"><style>{CSS}</style></head>"
            f"<body><main><h1>{escape(title)}</h1>"
            + (f"<p class=\"result\"><strong>{escape(result)}</strong></p>" if result else "")
            + f"<p>{escape(intro)}</p>{_link(link)}<nav><ol>{toc}</ol></nav>"
            f"{note_html}{''.join(body)}</main></body></html>\n")
