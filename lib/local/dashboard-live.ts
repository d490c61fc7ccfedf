/**
 * Live updates for the dashboard, by polling: every 1.5 s the page fetches itself and swaps in
 * the new `<main data-live>` when it changed, unless the operator is typing in a form (a page
 * never changes under their hands). Served as a same-origin file, so the CSP needs no inline
 * script; the markup it swaps in was escaped by the server, and parsed markup runs no scripts.
 */

export const LIVE_SCRIPT_PATH = "/ui/live.js";

export const LIVE_SCRIPT = `"use strict";
(() => {
  let typing = false;
  document.addEventListener("input", () => { typing = true; });
  const busy = () => {
    if (typing || document.hidden) return true;
    const a = document.activeElement;
    return !!a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT");
  };
  const tick = async () => {
    const current = document.querySelector("main[data-live]");
    if (!current || busy()) return;
    const res = await fetch(location.href, { cache: "no-store", headers: { "x-waymark-live": "1" } });
    if (!res.ok || busy()) return;
    const next = new DOMParser().parseFromString(await res.text(), "text/html").querySelector("main[data-live]");
    if (next && next.innerHTML !== current.innerHTML) current.replaceWith(document.adoptNode(next));
  };
  setInterval(() => { tick().catch(() => {}); }, 1500);
})();
`;
