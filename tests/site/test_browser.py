"""The built website in a real headless Chromium, with every outside host blocked."""

from urllib.parse import urlparse

import pytest

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make test installs it)")

# Console messages that are not the site's fault; keep this list short, each with its reason.
CONSOLE_ALLOW = (
    # sphinx-thebe 0.3.1 under Sphinx 7.4 writes its (unused: Thebe is off) config script twice
    # into every page; the second `const` declaration fails. Harmless, and upstream's to fix.
    "Identifier 'THEBE_JS_URL' has already been declared",
)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps",
]


def pages(site):
    return sorted(
        str(p.relative_to(site)) for p in site.rglob("*.html") if not p.relative_to(site).parts[0].startswith("_")
    )


@pytest.fixture(scope="module")
def browser(chromium_path):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def visit(browser, server):
    """Open a page; record outside requests (blocked), failed requests and console errors."""
    host = urlparse(server).netloc
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    log = {"outside": [], "failed": [], "console": []}

    def route(route):
        if urlparse(route.request.url).netloc == host:
            route.continue_()
        else:
            log["outside"].append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("requestfailed", lambda r: log["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and log["failed"].append(f"{r.url} (HTTP {r.status})"))
    page.on("console", lambda m: m.type == "error" and log["console"].append(m.text))
    page.on("pageerror", lambda e: log["console"].append(str(e)))

    def open_page(path):
        for entries in log.values():
            entries.clear()
        page.goto(f"{server}/{path}", wait_until="networkidle")
        return page, log

    yield open_page
    context.close()


def test_every_page_renders_offline_with_its_math(site, visit):
    checked_math = 0
    for path in pages(site):
        page, log = visit(path)
        math_sources = page.locator(".math").count()  # what Sphinx marked as math
        if math_sources:
            page.wait_for_selector("mjx-container", state="attached", timeout=20_000)
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.evaluate("() => MathJax.startup.promise")
            rendered = page.locator("mjx-container").count()
            assert rendered >= math_sources, f"{path}: {math_sources} formulas, {rendered} rendered by MathJax"
            assert page.locator("mjx-merror").count() == 0, f"{path}: MathJax reported an error"
            checked_math += 1
        assert not log["outside"], f"{path} requested outside hosts: {log['outside']}"
        assert not log["failed"], f"{path} had failed requests: {log['failed']}"
        errors = [m for m in log["console"] if not any(a in m for a in CONSOLE_ALLOW)]
        assert not errors, f"{path} console errors: {errors}"
    assert checked_math >= 2, "expected formulas on the intro and chapter 1 at least"


def test_chapter_1_shows_formulas_plots_and_launch_buttons(site, visit):
    page, _ = visit("chapters/01_attention_as_kv_store.html")
    page.evaluate("() => MathJax.startup.promise")
    assert page.locator("mjx-container").count() > 20
    plots = page.locator("img[src*='_images/']")
    assert plots.count() >= 3
    for i in range(plots.count()):  # every plot actually loaded
        assert page.evaluate("img => img.complete && img.naturalWidth > 0", plots.nth(i).element_handle())
    assert page.locator("details.dropdown, .solution.dropdown, div.dropdown").count() >= 4  # collapsed solutions
    screenshots = ROOT / "_build" / "screenshots"
    screenshots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshots / "chapter1.png"))
    page.screenshot(path=str(screenshots / "chapter1-plot.png"), full_page=True)


def test_search_finds_the_chapters(site, visit):
    page, log = visit("search.html?q=softargmax")
    page.wait_for_selector("#search-results ul li", timeout=20_000)
    results = page.locator("#search-results ul li a").all_inner_texts()
    assert any("key-value" in r.lower() for r in results), results
    assert not log["outside"] and not log["failed"]


HEAD_VIEW_JS = {
    "weights": "root => Array.from(root.querySelectorAll('.hv-k')).map(e => Number(e.dataset.weight))",
    "lines": "root => root.querySelectorAll('svg line').length",
}


def exercise_head_view(page, root):
    """Drive one head view like a reader: pick a head, hover tokens; return what changed."""
    def state():
        return root.evaluate(HEAD_VIEW_JS["weights"]), root.get_attribute("data-query")

    first, query = state()
    assert query is not None, "the view's script did not run"
    assert first and abs(sum(first) - 1) < 0.01 * len(first), first  # one row of a softmax, 3 decimals
    assert root.evaluate(HEAD_VIEW_JS["lines"]) == len(first)
    heads = root.locator("select.hv-head option").count()
    root.locator("select.hv-head").select_option(value=str(heads))  # options count from 1
    other_head, _ = state()
    assert other_head != first, "choosing another head did not change the weights"
    tokens = root.locator(".hv-q")
    target = 1 if query != "1" else 2
    tokens.nth(target).hover()
    hovered, now = state()
    assert now == str(target) and hovered != other_head, "hovering a token did not show its attention"
    token = tokens.nth(target).inner_text()
    assert f"how \u201c{token}\u201d attends" in root.locator(".hv-readout").inner_text()
    return first, other_head, hovered


def test_the_head_view_responds_to_the_reader(browser, tmp_path):
    import torch

    from companion.course import head_view

    g = torch.Generator().manual_seed(0)
    attentions = [torch.softmax(torch.randn(1, 4, 5, 5, generator=g), dim=-1) for _ in range(3)]
    page_file = tmp_path / "view.html"
    page_file.write_text("<!doctype html><html><body>" + head_view(list("abcde"), attentions).html + "</body></html>")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_file.as_uri())
    first, other_head, hovered = exercise_head_view(page, page.locator(".course-head-view"))
    expected = attentions[0][0, 0, 0]  # layer 1, head 1, query 0 shown first
    assert max(abs(a - b) for a, b in zip(first, expected.tolist())) <= 0.0005 + 1e-9
    assert max(abs(a - b) for a, b in zip(hovered, attentions[0][0, 3, 1].tolist())) <= 0.0005 + 1e-9
    assert not errors, errors
    page.close()


def test_chapter_9_head_view_works_in_the_built_site(site, visit):
    page, log = visit("chapters/09_pretrained_transformer.html")
    views = page.locator(".course-head-view")
    assert views.count() >= 1, "chapter 9 shows no head view"
    for i in range(views.count()):
        views.nth(i).scroll_into_view_if_needed()
        exercise_head_view(page, views.nth(i))
    screenshots = ROOT / "_build" / "screenshots"
    screenshots.mkdir(parents=True, exist_ok=True)
    views.first.screenshot(path=str(screenshots / "chapter9-head-view.png"))
    errors = [m for m in log["console"] if not any(a in m for a in CONSOLE_ALLOW)]
    assert not errors and not log["outside"], (errors, log["outside"])
