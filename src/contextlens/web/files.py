"""The cheap files every page loads: plotly.js, page.js, fit.js and the favicon, by path.

One table for both servers of a ``serve``: the made app's routes (web/app.py) and the preparing
server that answers until the app is made (web/preparing.py). A browser asks for the favicon (and a
page for its scripts) whatever the state, so while the model loads these answer 200 as later,
not the 503 the other requests get. Each file is read or drawn once (no network, no CDN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

STATIC = Path(__file__).with_name("static")


@lru_cache(maxsize=1)
def plotly_js() -> bytes:
    """The installed plotly package's own plotly.js (the copy reports/interactive.py inlines)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


@lru_cache(maxsize=1)
def page_js() -> bytes:
    return (STATIC / "page.js").read_bytes()


@lru_cache(maxsize=1)
def fit_js() -> bytes:
    """The narrow-screen fitting of a figure, shared with the reports (reports/fit.js)."""
    from contextlens.reports.plot_style import FIT_JS

    return FIT_JS.read_bytes()


@lru_cache(maxsize=1)
def favicon_ico() -> bytes:
    """A 32x32 lens drawn here (no file, no network): a PNG inside an ICO container."""
    import struct
    import zlib

    size = 32
    rows = []
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            d = ((x - 13.5) ** 2 + (y - 13.5) ** 2) ** 0.5
            handle = x > 20 and y > 20 and abs(x - y) < 3
            ring = 7.5 <= d <= 11.5
            r, g, b, a = (29, 78, 216, 255) if ring or handle else ((219, 234, 254, 255) if d < 7.5 else (0, 0, 0, 0))
            row += bytes([r, g, b, a])
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b"")
    header = struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(png), 22)
    return header + png


@dataclass(frozen=True)
class File:
    """One served file: its bytes (made on first use), its type and how long a browser keeps it."""

    content: Callable[[], bytes]
    media_type: str
    cache_control: str


FILES = {
    "/static/plotly.js": File(plotly_js, "text/javascript; charset=utf-8", "max-age=86400"),
    "/static/page.js": File(page_js, "text/javascript; charset=utf-8", "no-cache"),
    "/static/fit.js": File(fit_js, "text/javascript; charset=utf-8", "no-cache"),
    "/favicon.ico": File(favicon_ico, "image/x-icon", "max-age=86400"),
}
