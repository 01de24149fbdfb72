"""``t9k console`` in a real browser: Debian's Chromium, headless, driven by
Playwright's Python package (its driver is in the wheel; Playwright's own
browser download is never used), against the local cluster with the operator
running and ``t9k console`` started as a user starts it, from the URL it prints.

What a browser alone shows: the pages' scripts render the Server-Sent Events
(a job's phase moves on the Jobs page without a reload; a followed log grows on
the Job page); markup from the cluster (an annotation, an Event's message, a
log line) stays text and runs nothing; no token, session cookie or Secret value
reaches a page or the console's output; and the Content-Security-Policy is sent
and nothing of the console's own breaks it.

Chromium comes from hack/ensure-test-deps.sh (`make test-deps`); without it the
tests skip, which under CI=true is a failure (tests/conftest.py).
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders.common import ssh_secret_name
from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import EVENTS, PODS, SECRETS
from tests.integration.cluster import Cluster, wait_for
from tests.integration.console_process import t9k_console
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_cli import LOG_TEXTS, log_lines
from tests.integration.test_deepspeed_job import DEEPSPEED, ds_job

pytestmark = pytest.mark.usefixtures("crds_installed")

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 800}
MARKUP = "<script>window.__xss=1</script><img src=x onerror=window.__xss=2;alert(2)>"
"""Markup that would run were it parsed as HTML: it sets ``window.__xss`` or opens a dialog."""

# Before any of the page's own scripts: every CSP violation the page meets, kept
# where the test reads it (a script the test injects is not subject to the CSP).
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});
"""

# The phase the Jobs page shows for each job name, by the header PHASE.
PHASES = """
() => {
  const heads = [...document.querySelectorAll("#jobs thead th")].map((th) => th.textContent);
  const name = heads.indexOf("NAME"), phase = heads.indexOf("PHASE");
  const out = {};
  for (const tr of document.querySelectorAll("#jobs tbody tr")) {
    out[tr.children[name].textContent] = tr.children[phase].textContent;
  }
  return out;
}
"""

# Each change of a job's phase on the Jobs page, with the browser's wall-clock
# time (ms since the epoch), as a MutationObserver sees the table change.
OBSERVE_PHASES = """
(job) => {
  window.__seen = [];
  const read = () => {
    const heads = [...document.querySelectorAll("#jobs thead th")].map((th) => th.textContent);
    const name = heads.indexOf("NAME"), phase = heads.indexOf("PHASE");
    for (const tr of document.querySelectorAll("#jobs tbody tr")) {
      if (tr.children[name].textContent !== job) continue;
      const now = tr.children[phase].textContent;
      const last = window.__seen.length ? window.__seen[window.__seen.length - 1][1] : null;
      if (now !== last) window.__seen.push([Date.now(), now]);
    }
  };
  new MutationObserver(read).observe(document.querySelector("#jobs tbody"),
    { childList: true, subtree: true, characterData: true });
  read();
}
"""


def _playwright() -> Any:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: run `make test-deps` (Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is missing: run `make venv`")
    return sync_playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, for the module's tests."""
    sync_playwright = _playwright()
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def operator(
    operator_kubeconfig: Path, crds_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """One operator for the module's tests (each test's jobs are in a namespace
    of its own), as the ServiceAccount, all namespaces: started once, not per test."""
    proc = OperatorProcess(operator_kubeconfig, tmp_path_factory.mktemp("op") / "operator.log")
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@dataclass
class Console:
    """A ``t9k console`` process: the URL it printed and its output so far."""

    base: str
    token: str
    url_line: str
    out: Path

    def output(self) -> str:
        """What it printed, less the line that carries the URL with its token."""
        return self.out.read_text().replace(self.url_line, "")


@pytest.fixture
def console(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[Console]:
    """``t9k console --no-browser`` as a user starts it (the admin kubeconfig)."""
    out = tmp_path / "console.out"
    with t9k_console(cluster, namespace, out) as match:
        yield Console(match.group(1), match.group(2), match.group(0), out)


@dataclass
class Tab:
    """A signed-in page, and what the browser reported while the test used it."""

    page: Any
    console: Console
    messages: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)

    def goto(self, path: str) -> Any:
        response = self.page.goto(self.console.base + path)
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        return response

    def live(self) -> None:
        """Waits for the page's event stream to have delivered its first data."""
        self.page.wait_for_function(
            "() => document.getElementById('status').textContent === 'Live'"
        )


@contextlib.contextmanager
def browsing(browser: Any, console: Console) -> Iterator[Tab]:
    """A fresh browser context's page on ``console``, not yet signed in. After
    the test: no CSP violation (as an event or a console message), no error of
    the page's scripts, and no dialog."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(WATCH_CSP)
    page = context.new_page()
    page.set_default_timeout(20_000)
    tab = Tab(page, console)
    page.on("console", lambda m: tab.messages.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: tab.errors.append(str(e)))

    def dialog(d: Any) -> None:
        tab.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)

    def document(response: Any) -> None:
        if response.request.resource_type == "document":
            tab.headers[response.url] = response.all_headers()

    page.on("response", document)
    try:
        yield tab
        assert page.evaluate("window.__csp") == [], "CSP violations"
        assert not [m for m in tab.messages if "Content Security Policy" in m], tab.messages
        assert tab.errors == [], "the page's scripts failed"
        assert tab.dialogs == [], "a dialog opened"
    finally:
        context.close()


@pytest.fixture
def tab(browser: Any, console: Console) -> Iterator[Tab]:
    """A page signed in to ``console`` by the URL it printed (:func:`browsing`)."""
    with browsing(browser, console) as tab:
        signed_in = tab.page.goto(f"{console.base}/?token={console.token}")
        assert signed_in is not None and signed_in.ok
        assert tab.page.url == f"{console.base}/", "the token stays out of the address bar"
        yield tab


def _phase_changes(admin: KubeClient, namespace: str, name: str, stop: threading.Event) -> Any:
    """A thread that records (wall-clock time, phase) each time the API server's
    copy of the job shows another phase, polled every 50 ms."""
    seen: list[tuple[float, str]] = []

    def poll() -> None:
        while not stop.is_set():
            try:
                job = admin.get(PYTORCH, name, namespace)
            except NotFound:
                job = {}
            phase = (job.get("status") or {}).get("phase", "")
            if not seen or seen[-1][1] != phase:
                seen.append((time.time(), phase))
            stop.wait(0.05)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread, seen


def test_the_jobs_page_moves_a_jobs_phase_within_2s_without_a_reload(
    tab: Tab, admin: KubeClient, namespace: str, operator: OperatorProcess
) -> None:
    page = tab.page
    tab.live()
    page.evaluate("window.__loaded = 'once'")  # a reload would lose it
    page.evaluate(OBSERVE_PHASES, "browser-mnist")
    stop = threading.Event()
    thread, api = _phase_changes(admin, namespace, "browser-mnist", stop)
    job = pytorch_job(
        "browser-mnist",
        [("worker", 1, "Never")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "6s"},
    )
    try:
        Jobs(admin, namespace).create(job)
        page.wait_for_function(
            "() => (window.__seen || []).some(([, p]) => p === 'Succeeded')", timeout=90_000
        )
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(5)
    shown = page.evaluate("window.__seen")
    assert page.evaluate("window.__loaded") == "once", "the page was reloaded"
    assert page.evaluate(PHASES)["browser-mnist"] == "Succeeded"
    # Each phase the API server showed, on the page within 2 s of it.
    for phase in ("Running", "Succeeded"):
        written = next(t for t, p in api if p == phase)
        on_page = next(t / 1000 for t, p in shown if p == phase)
        assert on_page - written < 2.0, f"{phase} took {on_page - written:.2f}s: {shown} {api}"


def _log_file(cluster: Cluster, pod: dict[str, Any], container: str) -> Path:
    """The CRI log file KWOK's kubelet serves for ``container`` of ``pod``
    (hack/third_party/kwok/pod_logs.py)."""
    meta = pod["metadata"]
    return (
        cluster.kubeconfig.parent
        / "pod-logs"
        / meta["namespace"]
        / meta["name"]
        / meta["uid"]
        / f"{container}.log"
    )


def _append(path: Path, texts: list[str]) -> None:
    """Lines as a container runtime appends them to a CRI log."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
    with path.open("a") as f:
        f.writelines(f"{stamp} stdout F {text}\n" for text in texts)


def _running_pod(admin: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    def running() -> dict[str, Any] | None:
        try:
            pod: dict[str, Any] = admin.get(PODS, name, namespace)
        except NotFound:
            return None
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    return wait_for(running, 60, f"pod {name} Running")


def _page_text(page: Any) -> str:
    return str(page.evaluate("document.body.innerText"))


def test_the_job_page_follows_the_log_and_shows_markup_as_text(
    tab: Tab, cluster: Cluster, admin: KubeClient, namespace: str, operator: OperatorProcess
) -> None:
    page = tab.page
    job = pytorch_job(
        "browser-logs",
        [("worker", 1, "Never")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "600s"},
    )
    job["metadata"]["annotations"] = {"note": MARKUP}
    created = Jobs(admin, namespace).create(job)
    pod = _running_pod(admin, namespace, "browser-logs-worker-0")
    admin.create(
        EVENTS,
        {
            "metadata": {"generateName": "browser-logs-"},
            "involvedObject": {
                "apiVersion": created["apiVersion"],
                "kind": created["kind"],
                "name": "browser-logs",
                "namespace": namespace,
                "uid": created["metadata"]["uid"],
            },
            "reason": "Markup",
            "message": MARKUP,
            "type": "Normal",
            "source": {"component": "test"},
        },
        namespace,
    )

    tab.goto(f"/jobs/{namespace}/PyTorchTrainingJob/browser-logs")
    tab.live()
    page.evaluate("window.__loaded = 'once'")
    log = page.locator("#log")
    first = log_lines("browser-logs-worker-0", "pytorch")
    page.wait_for_function(
        "n => document.querySelectorAll('#log .line').length >= n", arg=len(LOG_TEXTS)
    )
    assert page.locator("#log-status").inner_text().startswith("Following the log of")
    assert log.inner_text().splitlines() == first

    # Lines the container writes now arrive on the page, markup as text.
    path = _log_file(cluster, pod, "pytorch")
    assert path.exists(), path
    more = ["epoch 3 loss 0.12", MARKUP, "epoch 4 loss 0.06"]
    written = time.monotonic()
    _append(path, more)
    page.wait_for_function(
        "n => document.querySelectorAll('#log .line').length >= n",
        arg=len(first) + len(more),
        timeout=30_000,
    )
    arrived = time.monotonic() - written
    assert log.inner_text().splitlines() == first + more, f"after {arrived:.1f}s"
    assert page.locator("#log img, #log script").count() == 0

    # The annotation (in the YAML) and the Event's message, as text too.
    page.wait_for_function(
        "t => document.querySelector('#events tbody').textContent.includes(t)", arg=MARKUP
    )
    assert page.get_by_role("cell", name=MARKUP).is_visible()
    yaml_text = " ".join(page.locator("#yaml").inner_text().split())
    assert f"note: {MARKUP}" in yaml_text or f"note: '{MARKUP}'" in yaml_text, yaml_text
    assert page.locator("main img, main script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined", "the markup ran"
    assert page.evaluate("window.__loaded") == "once", "the page was reloaded"
    assert tab.dialogs == []


def _secret_values(admin: KubeClient, namespace: str, name: str) -> list[str]:
    """Every value of the Secret, and each line of those of many lines (a
    private key's): any one of them on a page would be a leak."""
    secret = wait_for(lambda: _get(admin, name, namespace), 30, f"Secret {name}")
    values = [base64.b64decode(v).decode() for v in (secret.get("data") or {}).values()]
    assert values, secret
    parts = set(values)
    for value in values:
        parts.update(line for line in value.splitlines() if len(line) >= 20)
    # A public key's base64 alone, as well as the whole line.
    parts.update(w for v in values for w in v.split() if len(w) >= 40)
    return sorted(p for p in parts if p.strip() and "-----" not in p)


def _get(admin: KubeClient, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return dict(admin.get(SECRETS, name, namespace))
    except NotFound:
        return None


def test_no_token_cookie_or_secret_value_reaches_a_page_or_the_consoles_output(
    tab: Tab, admin: KubeClient, namespace: str, operator: OperatorProcess
) -> None:
    page = tab.page
    Jobs(admin, namespace, DEEPSPEED).create(ds_job("browser-ssh", 1, manual=False))
    secrets = _secret_values(admin, namespace, ssh_secret_name("browser-ssh"))
    [cookie] = [c for c in page.context.cookies() if c["httpOnly"]]
    assert page.evaluate("document.cookie") == "", "a script can read a cookie"
    hidden = {"token": tab.console.token, "session cookie": cookie["value"]}
    hidden.update({f"ssh Secret value {i}": s for i, s in enumerate(secrets)})

    tab.live()
    page.wait_for_function(f"() => ({PHASES})()['browser-ssh'] !== undefined")
    pages = {"/": page.content() + _page_text(page)}
    tab.goto(f"/jobs/{namespace}/DeepSpeedJob/browser-ssh")
    tab.live()
    page.wait_for_function(
        "() => document.getElementById('yaml').textContent.includes('browser-ssh')"
    )
    pages["job"] = page.content() + _page_text(page)
    tab.goto("/new")
    pages["new"] = page.content() + _page_text(page)
    output = tab.console.output()
    for what, value in hidden.items():
        for where, text in pages.items():
            assert value not in text, f"the {what} on the page {where}"
        assert value not in output, f"the {what} in the console's output"
        for message in tab.messages:
            assert value not in message, f"the {what} in the browser's console"


def test_every_page_carries_the_csp_and_breaks_none_of_it(tab: Tab, namespace: str) -> None:
    page = tab.page
    tab.live()
    tab.goto("/new")
    base = tab.console.base
    assert {f"{base}/", f"{base}/new"} <= set(tab.headers), tab.headers.keys()
    for url, headers in tab.headers.items():
        csp = headers.get("content-security-policy", "")
        directives = {d.strip().split(" ")[0]: d.strip() for d in csp.split(";")}
        assert directives.get("script-src") == "script-src 'self'", (url, csp)
        assert "default-src" in directives and "frame-ancestors" in directives, (url, csp)
        assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp, (url, csp)
    # What a violation looks like is seen: an inline script the page did not
    # bring is refused and reported, so the fixture's check of none can fail.
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.__xss = 3'; document.body.append(s); }"
    )
    page.wait_for_function("() => window.__csp.length > 0")
    assert page.evaluate("typeof window.__xss") == "undefined"
    page.evaluate("window.__csp = []")
    tab.messages[:] = [m for m in tab.messages if "Content Security Policy" not in m]


def test_chromium_is_debians(browser: Any) -> None:
    """The browser driven is /usr/bin/chromium, not one Playwright downloaded."""
    assert shutil.which("chromium") == str(CHROMIUM)
    version = subprocess.run(
        [str(CHROMIUM), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert browser.version.split(".")[0] in version
