"""The documentation site, built and looked at as a reader would.

One strict build (`mkdocs build --strict`, 0 warnings) of a copy of the docs, with the gallery
in its ``check`` mode: only the Getting started program executes (its output and figure appear
on two pages), every other gallery page shows its source, so the build takes about a minute
instead of the gallery's several (each gallery example runs at smoke size in
tests/examples/test_gallery.py).  Then:

- `tools/check_site.py` on the built pages: no broken table, no raw LaTeX outside rendered math,
  no Sphinx role or double backtick shown as typed, every page in the navigation, nothing loaded
  from another host (each rule is also shown to fire on a page made to break it);
- headless Chromium (Selenium with the system's chromium and chromedriver) on the home page,
  Getting started, an API page and a gallery page at 390 px and 1400 px: KaTeX rendered the math
  (a ``.katex`` element exists, no ``.katex-error``) and no element sticks out past the viewport
  (one inside a box that scrolls horizontally is fine: tables, code and display math scroll
  within the page).  Screenshots go to ``build/screenshots/``.  Without a browser these skip,
  naming what to install; CI installs one (.ci/run).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from check_site import check_site  # noqa: E402

MKDOCS = Path(sys.executable).with_name("mkdocs")
BUILD_TIMEOUT_S = 420   # about a minute on an idle 2-core machine; the shared machine can be 4x slower
SCREENSHOTS = ROOT / "build" / "screenshots"
PAGES = {"home": "", "getting_started": "getting_started/", "api_markov": "api/markov/",
         "gallery_first_model": "generated/gallery/first_model/"}
WIDTHS = (390, 1400)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.xdist_group("docs_site")   # one build per run (make test: --dist loadgroup)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built strictly from a copy of the sources (the working tree's docs/ is not written)."""
    if not MKDOCS.exists():
        pytest.fail(f"mkdocs is not installed beside {sys.executable}: `make setup` installs the docs extras")
    work = tmp_path_factory.mktemp("docs_build")
    shutil.copytree(ROOT / "docs", work / "docs", ignore=shutil.ignore_patterns("generated"))
    for name in ("mkdocs.yml",):
        shutil.copy2(ROOT / name, work / name)
    for name in ("examples", "tools", "sp_ode", "neural"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    env = {**os.environ, "SP_ODE_GALLERY": "check", "NO_MKDOCS_2_WARNING": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(work / "site")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-4000:]}"
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, f"the strict build logged: {warnings}"
    return work / "site"


def test_built_site_has_no_raw_markup_and_every_page_in_the_menu(site):
    problems = check_site(site)
    assert not problems, "\n".join(problems)
    for page in ("getting_started/index.html", "api/neural/index.html", "api/networks/index.html",
                 "generated/gallery/first_model/index.html", "bench/coupling_pilot/coupling_1m/index.html"):
        assert (site / page).is_file(), f"{page} was not built"


def test_getting_started_shows_the_program_output_and_figure(site):
    html = (site / "getting_started" / "index.html").read_text()
    text = html_text(html)
    assert "verify PASSED" in text, "the first program's verify report is not on Getting started"
    assert "sp_ode.verify(system" in text, "the first program's code is not on Getting started"
    assert 'src="../generated/gallery/images/mkd_glr_first_model_001.png"' in html
    assert (site / "generated" / "gallery" / "images" / "mkd_glr_first_model_001.png").is_file()


def test_reaction_network_guide_shows_every_route_and_the_conventions(site):
    text = html_text((site / "guide" / "reaction_networks" / "index.html").read_text())
    for call in ("sp_ode.ReactionNetwork(", "sp_ode.from_sbml(", "sp_ode.from_antimony(", "sp_ode.from_gillespy2(",
                 "sp_ode.stationary_distribution(Q, return_info=True)", "sp_ode.transient_distribution(",
                 "res.intervals(", "sp_ode.sweep(system", "sp_ode.verify_network("):
        assert call in text, f"the reaction-network guide does not show {call}"
    assert "Propensity conventions" in text and "Gillespie (1977)" in text
    assert "k·A·(A − 1)/V" in text and "c·A·(A − 1)/2" in text      # GillesPy2's 2 A → … against Gillespie's


def html_text(html: str) -> str:
    import html as html_module
    import re

    return html_module.unescape(re.sub(r"<[^>]+>", "", html))


def _page(tmp_path: Path, name: str, body: str) -> None:
    up = "../" if name else ""
    nav = f'<nav class="md-nav md-nav--primary"><a href="{up or "./"}">home</a><a href="{up}ok/">ok</a></nav>'
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(f"<html><body>{nav}{body}</body></html>")


def test_site_check_fires_on_each_problem(tmp_path):
    for asset in ("assets/katex/katex.min.js", "assets/katex/katex.min.css", "assets/javascripts/katex-render.js"):
        (tmp_path / asset).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / asset).write_text("")
    scripts = '<script src="../assets/katex/katex.min.js"></script><script src="../assets/javascripts/katex-render.js">'
    _page(tmp_path, "", '<p>fine <span class="arithmatex">\\(x\\)</span></p>' + scripts.replace("../", "") + "</script>")
    _page(tmp_path, "ok", "<p>fine, <code>code</code></p><pre><code>``literal in a code block``</code></pre>")
    assert check_site(tmp_path) == []
    _page(tmp_path, "ok", "<p>| a | b |</p><p>\\[ x \\]</p><p>see :class:`Foo`</p><td><code>``x``</code></td>"
                          '<link rel="stylesheet" href="https://example.org/font.css">')
    _page(tmp_path, "orphan", "<p>not linked from the menu</p>")
    _page(tmp_path, "nomath", '<div class="arithmatex">\\[x\\]</div>')
    _page(tmp_path, "gallery", '<ul class="mkd-glr-horizontal"><p>%s</p><li>* ![a](b.png){: .mkd-glr-multi-img}</li></ul>')
    problems = "\n".join(check_site(tmp_path))
    for expected in ("a table did not render", "raw LaTeX", "Sphinx role", "double backticks", "another host",
                     "orphan/: built, but not in the navigation", "does not load KaTeX",
                     "gallery image markup"):
        assert expected in problems, f"{expected!r} not reported:\n{problems}"


# --- in a browser ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("no headless browser: install Debian's `chromium` and `chromium-driver` "
                    "(apt-get install -y chromium chromium-driver; .ci/run does) to run the screenshot test")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the docs extra) is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="sp-ode-chromium-")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


# Elements whose right edge passes the viewport, unless a horizontally scrolling or clipping
# ancestor inside the viewport contains them; plus the page's own horizontal overflow.
OVERFLOW_JS = """
const W = document.documentElement.clientWidth, out = [];
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.right <= W + 1 || getComputedStyle(el).visibility === 'hidden') continue;
  let a = el.parentElement, contained = false;
  while (a && a !== document.body) {
    const s = getComputedStyle(a);
    if (['auto', 'scroll', 'hidden', 'clip'].includes(s.overflowX) && a.getBoundingClientRect().right <= W + 1) {
      contained = true; break;
    }
    a = a.parentElement;
  }
  if (!contained) out.push(el.tagName.toLowerCase() + '.' + String(el.className).slice(0, 40) + ' right=' + Math.round(r.right));
}
return {width: W, scrollWidth: document.documentElement.scrollWidth, overflowing: out.slice(0, 10),
        katex: document.querySelectorAll('.katex').length, errors: document.querySelectorAll('.katex-error').length,
        raw: document.querySelectorAll('.arithmatex:not([data-rendered])').length};
"""


def _look(browser, url: str, width: int, shot: Path) -> dict:
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": width < 600})
    browser.get(url)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 20).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && !document.querySelector('.arithmatex:not([data-rendered])')"))
    shot.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shot))
    return browser.execute_script(OVERFLOW_JS)


# slow (make test-slow, CI): a headless browser, started and driven over eight page views
@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_renders_math_and_fits_the_screen(browser, server, name, width):
    seen = _look(browser, server + PAGES[name], width, SCREENSHOTS / f"{name}_{width}.png")
    assert seen["katex"] > 0, f"{name}: no KaTeX element, the math is not rendered"
    assert seen["errors"] == 0 and seen["raw"] == 0, f"{name}: {seen['errors']} KaTeX errors, {seen['raw']} unrendered"
    assert seen["scrollWidth"] <= seen["width"], f"{name} at {width}px scrolls sideways: {seen}"
    assert not seen["overflowing"], f"{name} at {width}px: elements past the viewport: {seen['overflowing']}"


@pytest.mark.slow
def test_overflow_check_fires_on_a_wide_element(browser):
    page = ('<html><body><div style="width:2000px">too wide</div><div style="overflow-x:auto">'
            '<pre style="width:3000px">scrolls in its own box</pre></div></body></html>')
    seen = _look(browser, "data:text/html," + page, 390, SCREENSHOTS / "wide_390.png")
    assert len(seen["overflowing"]) == 1 and seen["overflowing"][0].startswith("div"), seen
    assert seen["katex"] == 0
