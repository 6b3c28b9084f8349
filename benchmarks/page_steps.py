"""One step of a page's layer slider, redrawn in the page, beside reloading the page at that layer.

Issue 20: every step of the slider was a page reload (the form submitted on each arrow key). Now a
page carries every view (web/views.py) and static/page.js redraws it. This serves minilm on
127.0.0.1, opens each slider page in Debian's Chromium headless shell, presses the left arrow key
``--steps`` times (timing each from the key to the next painted frame after the URL names the new
layer), then times a full load of the same page at another layer, the old cost of one step.

    python benchmarks/page_steps.py [--steps 4] [--model minilm]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import threading
import time

PAGES = {
    "explore": "/explore?words=bank+bat&permutations=200&layer=6",
    "attention": "/attention?s=The+[bank]+approved+the+loan.&s=The+river+[bank]+flooded.&layer=6&head=3",
    "probe": "/probe?s=She+sat+on+the+river+[bank].&s=He+robbed+the+[bank].&anchors=shore+money&layer=6",
    "rank": "/rank?layer=6",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--model", default="minilm")
    args = parser.parse_args()

    import uvicorn
    from playwright.sync_api import sync_playwright

    from contextlens.web.app import create_app

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from tests.helpers import CHROMIUM as chromium  # the browser the tests drive

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(args.model), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    print(f"{args.model}, {args.steps} arrow-key steps per page, headless Chromium, server on this machine")
    print(f"{'page':<10} {'step in the page (ms, median)':>30} {'reload at a layer (ms)':>24} {'ratio':>7}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, path in PAGES.items():
            page.goto(base + path)  # once unmeasured: imports and caches warm
            page.goto(base + path)
            page.wait_for_selector("#view-fig-0 .main-svg", timeout=60_000)
            page.focus("#f-layer")
            steps = []
            for k in range(args.steps):
                start = time.perf_counter()
                page.keyboard.press("ArrowLeft")
                page.wait_for_function(f"() => new URL(location.href).searchParams.get('layer') === '{5 - k}'")
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                steps.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            page.goto(base + path.replace("layer=6", "layer=3"))
            page.wait_for_selector("#view-fig-0 .main-svg", timeout=60_000)
            reload = (time.perf_counter() - start) * 1000
            step = statistics.median(steps)
            print(f"{name:<10} {step:>30.0f} {reload:>24.0f} {reload / step:>6.1f}x")
        browser.close()
    server.should_exit = True


if __name__ == "__main__":
    main()
