"""`memory ui` in a real browser: Debian's chromium driven by Playwright (no browser
download), against the viewer started as a user starts it, on a real database.

Marked slow: each module starts servers and a browser."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SESSIONS, new_db
from derived_state import ev
from playwright.sync_api import Browser, Page, sync_playwright

from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest

pytestmark = pytest.mark.slow
CHROMIUM = "/usr/bin/chromium"
# The flags a closed network needs (docs/ui.md): no background connections, no GPU.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
KEY = "AKIAIOSFODNN7EXAMPLE"
RULE = "Always run the migrations in a transaction."


class Viewer:
    """A running `memory ui`: its URL (with the token) and its process."""

    def __init__(self, db: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memplug.cli", "--db", str(db), "ui", "--no-open", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:") and "?token=" in self.url, self.url
        self.base = self.url.split("/?", 1)[0]
        self._wait()

    def _wait(self) -> None:
        for _ in range(100):
            try:
                urllib.request.urlopen(self.base + "/static/style.css", timeout=1)
            except urllib.error.HTTPError:
                return  # answering (a 403 without the token)
            except OSError:
                import time

                time.sleep(0.05)
        raise AssertionError("the viewer did not start")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=20)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = new_db(tmp_path_factory.mktemp("ui") / "m.sqlite")
    with Memory.open(path) as memory, open(SESSIONS / "shop.jsonl", "rb") as stream:
        memory.import_jsonl([("shop.jsonl", stream)])
        memory.ingest([ev("shop-1", 200, f"the deploy key is {KEY} for the staging bucket")])
        memory.assemble(AssemblyRequest(session_id="shop-1", query="which port for checkout?"))
    return path


@pytest.fixture(scope="module")
def viewer(db: Path) -> Iterator[Viewer]:
    running = Viewer(db)
    yield running
    assert running.stop() == 0  # Ctrl-C stops it cleanly


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, viewer: Viewer) -> Iterator[Page]:
    context = browser.new_context()
    opened = context.new_page()
    opened.goto(viewer.url)
    yield opened
    context.close()


def memory_cli(db: Path, *args: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "memplug.cli", "--db", str(db), *args, "--json"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_url_opens_the_projects_and_drops_the_token_from_the_address(page: Page) -> None:
    assert page.locator("h2").first.inner_text() == "/home/ana/shop"
    assert "token=" not in page.url
    page.click("text=shop-1")
    assert page.locator(".event.compaction").count() >= 1


def test_find_an_item_retract_it_and_it_leaves_the_core(
    page: Page, viewer: Viewer, db: Path
) -> None:
    page.goto(viewer.base + "/items")
    page.fill("input[name=q]", "migrations in a transaction")
    page.click("button:has-text('Filter')")
    link = page.locator("table.items a[href^='/item/']").first
    memory_id = link.inner_text()
    link.click()
    assert page.locator("p.content").inner_text() == RULE
    page.click("button:has-text('Retract')")
    assert page.locator("dd.status").inner_text().startswith("retracted")
    page.goto(viewer.base + "/core?project=/home/ana/shop")
    assert RULE not in page.content()
    core = memory_cli(db, "core", "--project", "/home/ana/shop")
    assert memory_id not in [line["ref"] for line in core["lines"]]


def test_a_correction_supersedes_and_never_overwrites(page: Page, viewer: Viewer, db: Path) -> None:
    page.goto(viewer.base + "/items?q=legacy+billing")
    page.locator("table.items a[href^='/item/']").first.click()
    old = page.locator("h1 code").inner_text()
    page.fill("input[name=text]", "Do not touch the legacy billing module before the audit.")
    page.click("button:has-text('Correct')")
    new = page.locator("h1 code").inner_text()
    assert new != old and "before the audit" in page.locator("p.content").inner_text()
    shown = memory_cli(db, "inspect", old)
    assert (shown["status"], shown["superseded_by"]) == ("superseded", new)
    assert shown["content"] == "Do not touch the legacy billing module."


def test_search_and_expand_a_hit_in_place(page: Page, viewer: Viewer) -> None:
    page.goto(viewer.base + "/search?q=port")
    assert "coverage" in page.locator("p.meta").inner_text()
    page.locator(".hit button:has-text('expand')").first.click()
    page.wait_for_selector(".hit pre.full")
    assert page.locator(".hit pre.full").first.inner_text().strip()


def test_an_injection_explains_why_the_model_saw_it(page: Page, viewer: Viewer) -> None:
    page.goto(viewer.base + "/injections")
    page.locator("a[href^='/injection/']").first.click()
    assert page.locator("h1").inner_text().startswith("Why the model saw this")
    assert page.locator("section.explain").count() >= 5
    assert page.locator("pre.message").inner_text().startswith("[memplug]")


def test_without_the_token_nothing_is_shown(browser: Browser, viewer: Viewer) -> None:
    context = browser.new_context()
    stranger = context.new_page()
    response = stranger.goto(viewer.base + "/items")
    assert response is not None and response.status == 403
    assert "Refused" in stranger.content() and "table" not in stranger.content()
    context.close()


def test_a_credential_is_never_on_a_page(page: Page, viewer: Viewer) -> None:
    page.goto(viewer.base + "/search?q=deploy+key+staging+bucket")
    html = page.content()
    assert "staging bucket" in html and KEY not in html and "[redacted:" in html
    page.goto(viewer.base + "/session/shop-1?after=150")
    assert KEY not in page.content()


# -- over plain HTTP: what a page of another site or a stale form would send ----------------


def _post(url: str, data: dict[str, str], cookie: str, host: str | None = None) -> int:
    body = "&".join(f"{k}={v}" for k, v in data.items()).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Cookie", cookie)
    if host:
        request.add_header("Host", host)
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as error:
        return error.code


def _cookie(page: Page) -> str:
    return "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())


def test_a_change_without_the_csrf_token_or_from_another_host_is_refused(
    page: Page, viewer: Viewer, db: Path
) -> None:
    item = memory_cli(db, "items", "--project", "/home/ana/shop")["items"][0]
    url = f"{viewer.base}/item/{item['id']}/retract"
    assert _post(url, {"note": "x"}, _cookie(page)) == 403
    assert _post(url, {"csrf": "guess"}, _cookie(page)) == 403
    assert _post(url, {"csrf": "guess"}, _cookie(page), host="evil.example") == 403
    assert memory_cli(db, "inspect", item["id"])["status"] == item["status"]


def test_read_only_and_a_second_viewer_beside_the_first(db: Path, viewer: Viewer) -> None:
    import http.cookiejar

    second = Viewer(db, "--read-only")
    try:
        # The token moves into a cookie on the first request: a client that keeps it.
        for running, wanted in ((second, "read-only"), (viewer, "Projects and sessions")):
            jar = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
            with urllib.request.build_opener(jar).open(running.url, timeout=10) as answer:
                assert wanted in answer.read().decode()
        item = memory_cli(db, "items", "--project", "/home/ana/shop")["items"][1]
        cookie = f"memplug_ui={second.url.rsplit('token=', 1)[1]}"
        assert _post(f"{second.base}/item/{item['id']}/retract", {}, cookie) == 403
    finally:
        assert second.stop() == 0
