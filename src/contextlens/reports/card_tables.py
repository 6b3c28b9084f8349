"""Tables that are cards on a phone: below 640 px each row of a ``table.cards`` is a card of
"label: value" lines, each label its column's header (the cell's ``data-label``), because a table of
many columns scrolled sideways in its box there. The cells' text is the same at every width.

Here, below the faces, so the HTML report (which inlines ``STYLE``) and the web pages share one
copy of the cells and the CSS.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

# Appended after a page's other rules: a card's cell overrides a table's padding and alignment.
STYLE = """
@media (max-width: 640px) {
  table.cards, table.cards tbody, table.cards tr, table.cards td, table.cards caption { display: block; width: 100%; }
  table.cards tr.head { display: none; }
  table.cards tr { border: 1px solid #d1d5db; border-radius: 4px; margin: .45em 0; padding: .15em 0; }
  table.cards td { border: 0; padding: .1em .5em; text-align: left !important; overflow-wrap: anywhere; }
  table.cards td::before { content: attr(data-label) ": "; color: #6b7280; font-weight: normal; }
  table.cards td[data-label=""]::before { content: none; }
}
"""


def cells(head: Sequence[str], values: Sequence[str], cards: bool = True, classes: Sequence[str] = ()) -> str:
    """One row's cells from HTML ``values``; for a card table each names its column (``data-label``),
    which a phone shows before the value (``STYLE``); ``classes``: each cell's class, "" for none."""
    kinds = classes or [""] * len(values)
    labels = [f' data-label="{html.escape(h)}"' for h in head] if cards else [""] * len(values)
    attrs = [(f' class="{c}"' if c else "") + label for c, label in zip(kinds, labels, strict=True)]
    return "".join(f"<td{a}>{v}</td>" for a, v in zip(attrs, values, strict=True))
