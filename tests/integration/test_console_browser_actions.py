"""``t9k console``'s actions in a real browser, driven as a person drives them,
by keyboard and clicks (the browser, the operator and the console as in
tests/integration/test_console_browser.py, whose fixtures these are):

- a job's YAML with a misspelt field, typed on the New job page: Preview and
  Create both show the API server's path of the field, and nothing is made;
- a running job paused and resumed from its Job page through the confirmation
  dialog (Tab, Enter, Escape), the page following the phase without a reload;
- ``t9k console --in-cluster`` (tests/integration/test_console_in_cluster.py's
  console and ServiceAccounts): alice and bob sign in on /signin, each sees
  their own namespace's job only, is shown the API server's refusal of the
  other's, and a pause of the other's job sent from the page's own context
  with its CSRF token (as a user tampering with the page would) is refused
  and changes nothing; neither token reaches a page, the browser's console or
  the console's log.

Without Chromium the tests skip, which under CI=true is a failure
(tests/conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.kube import KubeClient, NotFound
from tests.integration import test_console_in_cluster
from tests.integration.cluster import wait_for
from tests.integration.console_people import JOB
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_console import TYPO_YAML
from tests.integration.test_console_browser import Console, Tab, _page_text, browsing
from tests.integration.test_console_browser import browser as browser  # the fixtures
from tests.integration.test_console_browser import console as console
from tests.integration.test_console_browser import operator as operator
from tests.integration.test_console_browser import tab as tab
from tests.integration.test_console_in_cluster import teams as teams

in_cluster = test_console_in_cluster.console
"""The in-cluster console's fixture, by another name than the browser tests' console."""

pytestmark = pytest.mark.usefixtures("crds_installed")

TYPO_FIELD = ".spec.replicaSpecs[0].templat"

# The Job page's PHASE, from its summary.
PHASE = """
() => {
  const dt = [...document.querySelectorAll("#head dt")].find((d) => d.textContent === "Phase");
  return dt ? dt.nextElementSibling.textContent : null;
}
"""

# A POST from the page's own context with the CSRF token its page carries.
TAMPER = """
async (url) => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const r = await fetch(url, { method: "POST", headers: { "X-CSRF-Token": csrf },
                               credentials: "same-origin" });
  return [r.status, await r.text()];
}
"""


def _focused(page: Any) -> str:
    return str(page.evaluate("document.activeElement.id || document.activeElement.textContent"))


def _tab_to(page: Any, element_id: str) -> None:
    """Presses Tab until the element ``element_id`` has the focus, as a person would."""
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == element_id:
            return
    pytest.fail(f"Tab never reached #{element_id}")


def _confirm(page: Any, title: str) -> None:
    """In the open confirmation dialog (Cancel has the focus): Tab to OK, Enter."""
    page.wait_for_selector("#confirm[open]")
    assert page.locator("#confirm-title").inner_text() == title
    assert _focused(page) == "Cancel", "the dialog opens on Cancel"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "confirm-ok"
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm", state="hidden")


def test_a_misspelt_field_typed_on_the_new_job_page_is_refused_with_its_path(
    tab: Tab, admin: KubeClient, namespace: str
) -> None:
    page = tab.page
    tab.goto("/new")
    page.locator("#yaml-text").click()
    page.keyboard.type(TYPO_YAML)
    assert page.locator("#yaml-text").input_value() == TYPO_YAML
    page.keyboard.press("Tab")
    assert _focused(page) == "Preview"
    page.keyboard.press("Enter")
    status = page.locator("#result-status")
    page.wait_for_function(
        "() => document.getElementById('result-status').textContent.startsWith('Refused')"
    )
    assert status.inner_text() == "Refused (HTTP 422): nothing was created."
    assert page.evaluate("document.activeElement.id") == "result-error"
    assert TYPO_FIELD in page.locator("#result-message").inner_text()
    assert page.locator("#result-fields li").all_inner_texts() == [f"Field: {TYPO_FIELD}"]

    # Create is refused the same way: the API server's answer, read again.
    page.locator("#yaml-create").click()
    with page.expect_response(lambda r: r.url.endswith("/api/new/create")) as answer:
        _confirm(page, "Create this job?")
    assert answer.value.status == 422
    page.wait_for_function(
        "() => document.getElementById('result-status').textContent.startsWith('Refused')"
    )
    assert status.inner_text() == "Refused (HTTP 422): nothing was created."
    assert page.locator("#result-fields li").all_inner_texts() == [f"Field: {TYPO_FIELD}"]
    assert TYPO_FIELD in _page_text(page)
    assert page.locator("#result-link").is_hidden()
    with pytest.raises(NotFound):
        admin.get(PYTORCH, "console-typo", namespace)


def _api_phase(admin: KubeClient, namespace: str, name: str) -> str:
    return str((admin.get(PYTORCH, name, namespace).get("status") or {}).get("phase", ""))


def _paused(admin: KubeClient, namespace: str, name: str) -> bool:
    spec = admin.get(PYTORCH, name, namespace)["spec"]
    return bool(((spec.get("runMode") or {}).get("pause") or {}).get("enabled"))


def test_a_running_job_is_paused_and_resumed_from_its_page_by_keyboard(
    tab: Tab, admin: KubeClient, namespace: str, operator: OperatorProcess
) -> None:
    page = tab.page
    name = "browser-acts"
    job = pytorch_job(
        name,
        [("worker", 1, "Never")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "600s"},
    )
    Jobs(admin, namespace).create(job)
    wait_for(lambda: _api_phase(admin, namespace, name) == "Running", 60, "the job Running")
    tab.goto(f"/jobs/{namespace}/PyTorchTrainingJob/{name}")
    tab.live()
    page.evaluate("window.__loaded = 'once'")  # a reload would lose it
    page.wait_for_function(f"() => ({PHASE})() === 'Running'")
    assert page.locator("#action-resume").is_disabled()
    title = f"PyTorchTrainingJob {namespace}/{name}?"

    # Escape cancels: nothing is sent.
    _tab_to(page, "action-pause")
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#confirm", state="hidden")
    assert page.evaluate("document.activeElement.id") == "action-pause"
    assert page.locator("#action-status").inner_text() == ""

    page.keyboard.press("Enter")
    _confirm(page, f"Pause {title}")
    page.wait_for_function(f"() => ({PHASE})() === 'Paused'", timeout=60_000)
    assert _api_phase(admin, namespace, name) == "Paused"
    assert _paused(admin, namespace, name)
    assert page.locator("#action-pause").is_disabled()

    _tab_to(page, "action-resume")
    page.keyboard.press("Enter")
    _confirm(page, f"Resume {title}")
    page.wait_for_function(f"() => ({PHASE})() === 'Running'", timeout=60_000)
    assert _api_phase(admin, namespace, name) == "Running"
    assert not _paused(admin, namespace, name)
    assert page.evaluate("window.__loaded") == "once", "the page was reloaded"
    assert page.locator("#action-error").is_hidden()


def _sign_in(tab: Tab, token: str) -> None:
    """/signin as a person uses it: the token pasted, Tab to the button, Enter."""
    page = tab.page
    tab.goto("/")
    assert page.url == f"{tab.console.base}/signin", "not signed in: the form"
    page.locator("#token").fill(token)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "namespaces"
    page.keyboard.press("Tab")
    assert _focused(page) == "Sign in"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{tab.console.base}/", _page_text(page)
    assert token not in page.url


def test_each_person_signed_in_sees_their_jobs_only_and_cannot_pause_the_others(
    browser: Any,
    in_cluster: tuple[str, Path],
    teams: dict[str, tuple[str, str]],
    admin: KubeClient,
) -> None:
    base, out = in_cluster
    tokens = {who: token for who, (_, token) in teams.items()}
    seen: list[str] = []  # every page's content and the browser's console messages
    for me, other in (("alice", "bob"), ("bob", "alice")):
        mine, theirs = teams[me][0], teams[other][0]
        with browsing(browser, Console(base, "", "", out)) as tab:
            page = tab.page
            _sign_in(tab, tokens[me])
            tab.live()
            page.wait_for_function(
                "n => document.querySelector('#jobs tbody').textContent.includes(n)",
                arg=f"{me}-job",
            )
            seen.append(page.content() + _page_text(page))
            rows = page.locator("#jobs tbody tr").all_inner_texts()
            assert len(rows) == 1, rows
            assert mine in rows[0] and f"{me}-job" in rows[0], rows
            assert f"{other}-job" not in rows[0] and theirs not in rows[0], rows

            # The other's job page: the API server's refusal, as text.
            refused = page.goto(f"{base}/jobs/{theirs}/{JOB}/{other}-job")
            assert refused is not None and refused.status == 403
            text = _page_text(page)
            seen.append(page.content() + text)
            assert f'"system:serviceaccount:{mine}:{me}" cannot get resource' in text, text
            assert f'"{other}-job" is forbidden' in text and f'namespace "{theirs}"' in text

            # A pause of it from the page's context, with the page's CSRF token.
            tab.goto("/")
            tab.live()
            status, body = page.evaluate(TAMPER, f"/api/jobs/{theirs}/{JOB}/{other}-job/pause")
            assert status == 403, body
            reason = json.loads(body)["error"]
            assert f'"system:serviceaccount:{mine}:{me}" cannot get resource' in reason, reason
            assert not _paused(admin, theirs, f"{other}-job"), "the other's job was paused"
            seen.append(page.content() + _page_text(page))
            seen.extend(tab.messages)
    log = out.read_text()
    assert log.count("console sign-in") >= 2, log
    for who, token in tokens.items():
        assert len(token) > 100, who
        for text in seen:
            assert token not in text, f"{who}'s token on a page or in the browser's console"
        assert token not in log, f"{who}'s token in the console's log"
