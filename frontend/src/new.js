// The New job page: a job from YAML or from t9k create's fields, previewed by
// POST /api/new/preview (the API server's dry run: nothing stored) and made by
// POST /api/new/create after a confirmation. Each request carries the session's
// CSRF token. Every string from the user or the API server is written with
// textContent, never parsed as HTML.

import { $, csrf, el } from "./lib/dom.js";

// What the request sends: the YAML as typed, or the form's fields.
function payload(which) {
  if (which === "yaml") return { yaml: $("yaml-text").value };
  const form = {};
  new FormData($("fields-form")).forEach((value, key) => { form[key] = String(value); });
  form.torchrun = $("f-torchrun").checked;
  return { form };
}

function show(data, ok, status) {
  $("result-manifest").textContent = data.manifest || "";
  $("result-yaml").textContent = ok ? (data.yaml || "") : "";
  $("result-error").hidden = ok;
  $("result-message").textContent = ok ? "" : (data.error || ("HTTP " + status));
  $("result-fields").replaceChildren(...(ok ? [] : (data.fields || [])).map(
    (f) => el("li", "Field: " + f)));
  const link = $("result-link");
  link.hidden = !(ok && data.created);
  if (ok && data.created) link.href = data.url;
  else link.removeAttribute("href");
}

async function send(which, action) {
  const verb = action === "create" ? "Creating" : "Previewing";
  $("result-status").textContent = verb + "\u2026";
  let response, data;
  try {
    response = await fetch("/api/new/" + action, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
      body: JSON.stringify(payload(which)),
      credentials: "same-origin",
    });
    data = await response.json().catch(() => ({}));
  } catch (e) {
    $("result-status").textContent = "The console did not answer: " + e.message;
    return;
  }
  show(data, response.ok, response.status);
  if (!response.ok) {
    $("result-status").textContent = "Refused (HTTP " + response.status + "): nothing was created.";
    $("result-error").focus();
  } else if (data.created) {
    $("result-status").textContent = "Created " + data.key + ".";
    $("result-link").focus();
  } else {
    $("result-status").textContent = "Preview of " + data.key + ": nothing was created.";
  }
}

function confirmCreate(which) {
  if (which === "fields" && !$("fields-form").reportValidity()) return;
  const dialog = $("confirm");
  $("confirm-text").textContent = which === "yaml"
    ? "The API server checks the YAML strictly and creates the job it describes."
    : "The job these fields make (" + $("f-kind").value + " " + $("f-name").value +
      ") is created.";
  dialog.returnValue = "";
  dialog.showModal();
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "ok") send(which, "create");
  }, { once: true });
}

document.addEventListener("DOMContentLoaded", () => {
  $("result-error").tabIndex = -1;
  $("yaml-form").addEventListener("submit", (e) => { e.preventDefault(); send("yaml", "preview"); });
  $("fields-form").addEventListener("submit", (e) => { e.preventDefault(); send("fields", "preview"); });
  $("yaml-create").addEventListener("click", () => confirmCreate("yaml"));
  $("fields-create").addEventListener("click", () => confirmCreate("fields"));
});
