// What the pages' scripts share: reading the page's elements, making new ones,
// the Job page's address and the session's CSRF token. Every string is written
// with textContent, never parsed as HTML.

export const $ = (id) => document.getElementById(id);

// A new element `tag` with `text` (if any) and class `cls` (if any).
export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// The <namespace>, <kind> and <name> of the page's job, from its address
// /jobs/<namespace>/<kind>/<name>.
export function pageJob() {
  return location.pathname.split("/").slice(2).map(decodeURIComponent);
}

// A link to the Job page of [namespace, kind, name].
export function jobLink(parts, text) {
  const a = el("a", text);
  a.href = "/jobs/" + parts.map((p) => encodeURIComponent(p)).join("/");
  return a;
}

// The session's CSRF token, which every request that changes something carries.
export function csrf() {
  return document.querySelector('meta[name="csrf-token"]').content;
}
