"""The self-contained HTML report: inline CSS, figures embedded as base64 PNG, no
script and no request leaving the report folder (the Listen section's audio elements
play files of its audio/ folder by relative path); readable on a phone (fluid images,
tables scroll sideways inside their own box)."""

from __future__ import annotations

import base64
from html import escape
from urllib.parse import quote

from simulplay.analysis.report.model import ReportAudio, ReportFigure, ReportTable
from simulplay.analysis.report.render import caption, cells, heading, shown

CSS = """
:root{--fg:#1d232b;--muted:#5b6673;--line:#d8dee6;--bg:#fff;--head:#f3f5f8}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:980px;margin:0 auto;padding:1rem}
h1{font-size:1.45rem;margin:.5rem 0}
h2{font-size:1.15rem;margin:2rem 0 .4rem;padding-top:.6rem;border-top:1px solid var(--line)}
p{margin:.4rem 0}
.caption{color:var(--muted);font-size:.9rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0;border:1px solid var(--line);border-radius:4px}
table{border-collapse:collapse;font-size:.82rem;font-variant-numeric:tabular-nums;min-width:100%}
th,td{padding:.3rem .55rem;border-bottom:1px solid var(--line);white-space:nowrap;text-align:left}
th{background:var(--head);position:sticky;top:0;font-weight:600}
td.num,th.num{text-align:right}
tr:last-child td{border-bottom:0}
figure{margin:1rem 0}
figure img{display:block;max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px}
figcaption{color:var(--muted);font-size:.9rem;margin-top:.4rem}
.sig{font-size:.72rem;color:var(--muted);overflow-wrap:anywhere;word-break:break-all}
.sig code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
nav ol{padding-left:1.2rem;columns:2 16rem;font-size:.9rem}
.notes li{color:#7a4b00}
.note{color:#7a4b00;font-size:.9rem}
"""


def _table(table: ReportTable) -> str:
    df, _ = shown(table)
    numeric = [df[c].dtype.kind in "fiu" for c in df.columns]
    head = "".join(f'<th scope="col"{" class=num" if n else ""}>{escape(table.label(c))}</th>'
                   for c, n in zip(df.columns, numeric))
    rows = "".join("<tr>" + "".join(f'<td{" class=num" if n else ""}>{escape(v)}</td>' for v, n in zip(row, numeric))
                   + "</tr>" for row in cells(table, df))
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


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
            f'<img src="data:image/png;base64,{data}" width="{width}" height="{height}" '
            f'alt="{escape(heading(fig))}"><figcaption>{escape(fig.caption)}</figcaption></figure>'
            f"{_signatures(fig.lines)}</section>")


def _section_audio(item: ReportAudio) -> str:
    """Audio elements with relative sources (files of the report folder), then the table."""
    clips = "".join(f'<figure><figcaption>{escape(c.label)}</figcaption><audio controls preload="metadata" '
                    f'src="{escape(quote(c.file))}" data-duration="{c.duration_s:.6f}" style="width:100%;max-width:32rem">'
                    f'<a href="{escape(quote(c.file))}">{escape(c.file)}</a></audio></figure>' for c in item.clips)
    return (f'<section id="{item.key}"><h2>{escape(heading(item))}</h2><p class="caption">{escape(item.caption)}</p>'
            f"{clips}{_table(item.table)}{_signatures(item.lines)}</section>")


def _section(item) -> str:
    if isinstance(item, ReportTable):
        return _section_table(item)
    if isinstance(item, ReportAudio):
        return _section_audio(item)
    return _section_figure(item)


def page(title: str, intro: str, items: list, notes: list[str]) -> str:
    """The whole document; ``items`` are tables and figures in report order."""
    toc = "".join(f'<li><a href="#{i.key}">{escape(heading(i))}</a></li>' for i in items)
    body = []
    for item in items:
        body.append(_section(item))
    note_html = ("<section id=\"notes\"><h2>Notes</h2><ul class=\"notes\">"
                 + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul></section>") if notes else ""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><link rel=\"icon\" href=\"data:,\"><style>{CSS}</style></head>"
            f"<body><main><h1>{escape(title)}</h1><p>{escape(intro)}</p><nav><ol>{toc}</ol></nav>"
            f"{note_html}{''.join(body)}</main></body></html>\n")
