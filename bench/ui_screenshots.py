"""Screenshots of the viewer's main pages for docs/ui.md, taken with the browser the tests use.

    python -m bench.ui_screenshots [--out docs/ui]

The bundled shop session and the typed-records fixture go into a temporary database, one
assembly is logged, ``memory ui --no-open`` starts, and Debian's chromium (Playwright,
``executable_path=/usr/bin/chromium``) saves one PNG a page.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

from memplug.hosts import claude_hook
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest

REPO = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
STRUCTURAL = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000003"
PAGES = (
    ("projects", "/"),
    ("session", "/session/shop-1?after=60"),
    ("items", "/items?project=/home/ana/shop"),
    ("item", None),  # the first item of the items page
    ("core", "/core?project=/home/ana/shop"),
    ("injection", "/injection/1"),
    ("search", "/search?q=port+checkout"),
)


def _database(path: Path) -> None:
    with Memory.open(path) as memory, open(REPO / "fixtures/sessions/shop.jsonl", "rb") as f:
        memory.import_jsonl([("shop.jsonl", f)])
        memory.assemble(AssemblyRequest(session_id="shop-1", query="which port for checkout?"))
    transcript = REPO / "fixtures/claude_code_structural" / f"{STRUCTURAL}.jsonl"
    stop = {"session_id": STRUCTURAL, "transcript_path": str(transcript),
            "cwd": "/home/ana/shop", "hook_event_name": "Stop"}  # fmt: skip
    claude_hook.main(json.dumps(stop).encode(), db_path=str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(REPO / "docs" / "ui"), help="where the PNGs go")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "m.sqlite"
        _database(db)
        server = subprocess.Popen([sys.executable, "-m", "memplug.cli", "--db", str(db), "ui",
                                   "--no-open"], stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        base = url.split("/?", 1)[0]
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/", timeout=1)
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.05)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 860})
                page.goto(url)
                for name, path in PAGES:
                    if path is None:
                        page.goto(base + "/items?project=/home/ana/shop")
                        page.locator("table.items a[href^='/item/']").first.click()
                    else:
                        page.goto(base + path)
                    page.screenshot(path=str(out / f"{name}.png"))
                    print(out / f"{name}.png")
                browser.close()
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
