"""Wikipedia markup to plain text: gensim's ``filter_wiki``, the same output, about 5x faster.

The enwiki reader's cost was gensim's markup filter, not the XML or the decompression. Its
steps are kept exactly, in its order, with its own patterns (``gensim.corpora.wikicorpus.RE_P*``),
made cheaper three ways that cannot change a result: a substitution is skipped when the text
lacks a substring every match must contain (no ``<`` -> no tag to remove); the two patterns that
begin with a look-behind tried at every position are given a look-ahead on the one character
their match must start with; and nested templates are removed by scanning only the braces
instead of every character. ``tests/test_corpus_scan.py`` checks the output equals gensim's on
every page of the installed sample; ``benchmarks/corpus.py --read`` times both.
"""

from __future__ import annotations

import functools
import re
from types import SimpleNamespace

_BRACES = re.compile(r"[{}]")
_P17_WORDS = ("bgcolor", "colspan", "rowspan", "style=", "class=", "align=", "scope=")


@functools.cache
def _patterns() -> SimpleNamespace:
    """gensim's patterns (gensim imported when a page is first cleaned: it pulls in scipy)."""
    from gensim.corpora import wikicorpus as w

    return SimpleNamespace(
        w=w,
        p12=re.compile(r"(?=[{|])" + w.RE_P12.pattern, w.RE_P12.flags),  # starts with {| or |- or |}
        p13=re.compile(r"(?=[|!])" + w.RE_P13.pattern, w.RE_P13.flags),  # its match starts with | or !
    )


def filter_wiki(raw: str) -> str:
    """``gensim.corpora.wikicorpus.filter_wiki(raw)`` (defaults: markup left over promoted to
    text, links simplified to their description)."""
    from gensim import utils

    text = utils.decode_htmlentities(utils.to_unicode(raw, "utf8", errors="ignore"))
    return remove_markup(text)


def remove_markup(text: str) -> str:
    p = _patterns()
    w = p.w
    if text.endswith(("]]", "]]\n")):  # P2 ends at the text's end ($) with ]]
        text = w.RE_P2.sub("", text)
    text = remove_template(text)
    text = w.remove_file(text)
    iters = 0
    while True:
        old, iters = text, iters + 1
        text = _one_pass(text, p)
        if old == text or iters > 2:
            break
    return text.replace("[", "").replace("]", "")


def _one_pass(text: str, p: SimpleNamespace) -> str:
    """One pass of gensim's loop in ``remove_markup``, its steps in its order."""
    w = p.w
    if "<" in text:
        text = _remove_tags(text, w)
    if "[[Category:" in text:
        text = w.RE_P14.sub("", text)
    if "://" in text:
        text = w.RE_P5.sub("\\3", text)
    if "[" in text and "|" in text:
        text = w.RE_P6.sub("\\2", text)
    text = text.replace("!!", "\n|")
    text = text.replace("|-||", "\n|")
    if "{|" in text or "|-" in text or "|}" in text:
        text = p.p12.sub("\n", text)
    text = text.replace("|||", "|\n|")
    text = text.replace("||", "\n|")
    if "|" in text or "!" in text:
        text = p.p13.sub("\n", text)
    if any(word in text for word in _P17_WORDS):
        text = w.RE_P17.sub("\n", text)
    return text.replace("[]", "")


def _remove_tags(text: str, w) -> str:
    """Comments, references, nowiki and math blocks, then any other tag (gensim's P0, P1, P9, P10, P11)."""
    if "<!--" in text:
        text = w.RE_P0.sub("", text)
    if "<ref" in text:
        text = w.RE_P1.sub("", text)
    if "<nowiki" in text:
        text = w.RE_P9.sub("", text)
    if "<math" in text:
        text = w.RE_P10.sub("", text)
    if "<" in text:  # P11 needs a < and a > after it
        text = w.RE_P11.sub("", text)
    return text


def remove_template(s: str) -> str:
    """``gensim.corpora.wikicorpus.remove_template``: the same spans, found by visiting the braces
    only (a template opens at ``{{`` and closes when its braces balance)."""
    n_open = n_close = 0
    starts, ends = [], [-1]
    inside = False
    for m in _BRACES.finditer(s):
        i, c = m.start(), m.group()
        if not inside and c == "{" and i > 0 and s[i - 1] == "{":
            starts.append(i - 1)
            inside, n_open = True, 1
        if inside:
            if c == "{":
                n_open += 1
            else:
                n_close += 1
            if n_open == n_close:
                ends.append(i)
                inside, n_open, n_close = False, 0, 0
    starts.append(None)
    return "".join(s[end + 1 : start] for end, start in zip(ends, starts, strict=False))  # gensim drops an unclosed one
