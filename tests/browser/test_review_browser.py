"""The review page in a real headless browser (Debian's Chromium driven by Selenium through Debian's chromedriver;
nothing is downloaded at run time). Run by `make test-browser`, which installs them; skipped elsewhere.

Load the page, give a name, decide with the keyboard (a: approve, 1-9: relabel, r: reject), reload, and find each
decision in the ledger; screenshots at desktop and phone widths go to benchmarks/results/review_page/."""

import os
import shutil
import socket
import threading
import time
from importlib import resources
from pathlib import Path

import pytest

if os.environ.get("CULTUREKB_BROWSER_TESTS") != "1":
    pytest.skip("browser test: run `make test-browser`", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not (Path(CHROMEDRIVER).exists() and Path(CHROMIUM).exists()):
    pytest.skip("Chromium and chromedriver are not installed (make test-browser installs them)",
                allow_module_level=True)

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from culturekb.kb.ledger import ledger_path, read_ledger  # noqa: E402
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple, Sample  # noqa: E402
from culturekb.kb.store import KnowledgeBase  # noqa: E402

SHOTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "review_page"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path):
    import uvicorn

    from culturekb.api.review_page import create_review_app

    image = Path(str(resources.files("culturekb.data").joinpath(
        "demo", "commet", "images", "willard-metcalf_havana-harbor.jpg")))
    texts = {"harbor": "the quiet harbor at dusk makes me feel calm and far from home",
             "boat": "a small boat waits in the harbor, the sea is still",
             "sunset": "the sunset over the harbor is sad, like a farewell"}
    tuples = [KnowledgeTuple(concept=c, culture="zh", label="contentment",
                             distribution={"contentment": 0.5, "sadness": 0.3, "awe": 0.2}, support=10,
                             rationales=[texts[c]], status="pending", flagged=True,
                             verdicts=[JudgeVerdict(judge="lexicon", label="sadness", agrees=False),
                                       JudgeVerdict(judge="prototype", label="contentment", agrees=True)])
              for c in texts]
    kb_dir = tmp_path / "kb"
    KnowledgeBase(tuples).save(kb_dir)
    samples = [Sample(id=f"havana-{i}", culture="zh", label="contentment", image=str(image),
                      title="Havana Harbor (Willard Metcalf)", explanations=[t]) for i, t in enumerate(texts.values())]
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_review_app(kb_dir, samples=samples), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", kb_dir
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def browser(tmp_path: Path):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_window_size(1280, 1000)
    yield driver
    driver.quit()


def _wait(driver, check, timeout: float = 10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            found = check()
        except Exception:  # noqa: BLE001 - the page is reloading
            found = None
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out on {driver.current_url}")


def _current(driver) -> str:
    return driver.find_element(By.ID, "tuple").get_attribute("data-tuple")


def _in_view_above_the_bar(driver) -> dict:
    """Where the distribution and the verdicts end, and where the sticky action bar begins, on the screen as
    loaded (not scrolled); asserts both cards are whole above the bar, and the bar on the screen."""
    geo = driver.execute_script(
        "const r = id => document.getElementById(id).getBoundingClientRect();"
        "return {distribution: r('distribution').bottom, verdicts: r('verdicts').bottom, bar: r('decide').top,"
        " bar_height: r('decide').height, header: document.querySelector('header').getBoundingClientRect().height,"
        " screen: window.innerHeight, scrolled: window.scrollY};")
    assert geo["scrolled"] == 0, geo
    assert geo["distribution"] <= geo["bar"] and geo["verdicts"] <= geo["bar"] < geo["screen"], geo
    return geo


def test_decide_with_the_keyboard_reload_and_find_it_in_the_ledger(served, browser) -> None:
    base, kb_dir = served
    browser.get(base + "/")
    browser.find_element(By.ID, "name").send_keys("Mei")
    browser.find_element(By.ID, "name").submit()
    _wait(browser, lambda: browser.find_element(By.ID, "reviewer").text == "Mei")
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "desktop.png"))
    _in_view_above_the_bar(browser)
    body = browser.find_element(By.TAG_NAME, "body")
    first = _current(browser)
    body.send_keys("a")  # approve
    _wait(browser, lambda: _current(browser) != first)
    second = _current(browser)
    browser.find_element(By.TAG_NAME, "body").send_keys("4")  # relabel to the 4th label, sadness
    _wait(browser, lambda: _current(browser) != second)
    third = _current(browser)
    note = browser.find_element(By.NAME, "note")
    browser.find_element(By.TAG_NAME, "body").send_keys("n")
    _wait(browser, lambda: browser.switch_to.active_element == note)
    note.send_keys("not about the sea")
    note.send_keys("\ue00c")  # Escape leaves the note; the next key is a shortcut again
    browser.find_element(By.TAG_NAME, "body").send_keys("r")  # reject
    _wait(browser, lambda: browser.find_elements(By.ID, "empty"))
    browser.refresh()
    _wait(browser, lambda: browser.find_elements(By.ID, "empty"))
    got = {(d.tuple_id, d.decision, d.label, d.reviewer, d.note) for d in read_ledger(ledger_path(kb_dir))}
    assert got == {(first, "approve", None, "Mei", ""), (second, "relabel", "sadness", "Mei", ""),
                   (third, "reject", None, "Mei", "not about the sea")}
    browser.get(base + "/?status=decided&t=" + second)
    _wait(browser, lambda: _current(browser) == second)
    assert "sadness" in browser.find_element(By.ID, "history").text
    browser.save_screenshot(str(SHOTS / "desktop_decided.png"))
    browser.set_window_size(390, 844)
    browser.get(base + "/?status=all&t=" + third)
    _wait(browser, lambda: _current(browser) == third)
    browser.save_screenshot(str(SHOTS / "phone.png"))
    geo = _in_view_above_the_bar(browser)  # a phone: the distribution and the verdicts come before the rationales
    print("phone layout (px):", geo)
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390 + 1  # no sideways scroll
