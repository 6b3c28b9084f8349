"""Self-contained HTML pages of plotly figures: they open with no network.

plotly.js is inlined once per page (no CDN), and no fonts, images or scripts are fetched;
:func:`remote_resources` lists anything a page would still load, so a test can check there is none.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from contextlens.core import atomic_files
from contextlens.reports import card_tables
from contextlens.reports.plot_style import FIT_JS, PLOT_CONFIG


def figure_div(fig: go.Figure) -> str:
    """One figure as an HTML fragment that expects plotly.js already on the page."""
    return fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False, config=PLOT_CONFIG)


# On a phone each figure is fitted to the width: side-by-side panels stacked, the title below the
# toolbar (reports/fit.js, the same script as the web pages'). fit.js comes in the head, after
# plotly.js, so each figure is fitted before its first draw (drawn once); this line then finds them fitted.
PHONE_JS = """
document.querySelectorAll('.plotly-graph-div').forEach(function (d) { window.contextlensFit.fitDiv(d); });
"""


def page(title: str, body: str) -> str:
    """A complete HTML page with plotly.js inlined, so it opens offline."""
    fit_js = FIT_JS.read_text(encoding="utf-8")  # each figure fitted to a phone's width
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
*, *::before, *::after {{ box-sizing: border-box; }}
body {{ font-family: sans-serif; max-width: 1200px; margin: 1.5em auto; padding: 0 1em; color: #1f2937; }}
.plotly-graph-div, img {{ max-width: 100%; }}
.scroll {{ overflow-x: auto; max-width: 100%; }}
pre, code {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
@media (max-width: 640px) {{
  body {{ padding: 0 .5em; margin: .5em auto; }} h1 {{ font-size: 1.35em; }}
}}
h1 {{ font-size: 1.7em; }} h2 {{ border-bottom: 1px solid #d1d5db; padding-bottom: .2em; margin-top: 2em; }}
p.explain {{ font-size: 1.05em; line-height: 1.45; }} p.numbers {{ color: #374151; }}
table {{ border-collapse: collapse; margin: .6em 0; font-size: .92em; }}
td, th {{ border: 1px solid #d1d5db; padding: .25em .6em; text-align: right; }}
th {{ background: #f3f4f6; }} td.text {{ text-align: left; }}
{card_tables.STYLE}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
<script>{fit_js}</script>
</head><body>
<h1>{html.escape(title)}</h1>
{body}
<script>{PHONE_JS}</script>
</body></html>
"""


class _ResourceFinder(HTMLParser):
    """Collects every URL a browser would fetch: element attributes and CSS url()/@import."""

    URL_ATTRS = {"src", "href", "srcset", "data", "poster", "action", "formaction", "background"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        for name, value in attrs:
            if value and (name in self.URL_ATTRS or name == "style") and _REMOTE.search(value):
                self.found.append(f"<{tag} {name}={value[:80]!r}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style and _REMOTE.search(data):
            self.found.extend(m.group(0) for m in _CSS_URL.finditer(data))


_REMOTE = re.compile(r"(?:https?:)?//[^\s\"')]+", re.IGNORECASE)
_CSS_URL = re.compile(r"(?:url\(|@import)\s*['\"]?(?:https?:)?//[^'\")\s]+", re.IGNORECASE)


def remote_resources(document: str) -> list[str]:
    """URLs the page would load from the network (tags and styles; script text is not parsed)."""
    finder = _ResourceFinder()
    finder.feed(document)
    return finder.found


def write_page(figures: Sequence[go.Figure], path: Path | str, title: str) -> Path:
    """Write figures as one self-contained interactive HTML file."""
    return atomic_files.write_text(path, page(title, "\n".join(figure_div(f) for f in figures)))
