/**
 * Open a secret link in the local browser without putting the secret on a command line.
 *
 * `vscode.env.openExternal(link)` hands the link to the OS opener (`xdg-open`, `open`), which
 * starts the browser with it in `argv`, where every local user can read it (`ps`) — and the
 * link's path holds the trace server's token. So when the browser runs on this machine, the
 * link goes into an HTML page only the user can read (0600, in a fresh 0700 folder) and the
 * browser is given the page's file URI; the page sends it on to the link. The caller deletes
 * the page once the trace was fetched or the wait ended. (The same scheme as the CLI's
 * `server/torchscope/host/browser.py`.) No `vscode` import: unit-tested in node.
 */
import * as fs from "node:fs";
import * as path from "node:path";

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The page: a meta refresh (works without scripts) and `location.replace` (keeps no history entry). */
export function redirectHtml(link: string): string {
  const quoted = escapeHtml(link);
  const script = JSON.stringify(link).replace(/</g, "\\u003c");
  return (
    "<!doctype html><meta charset=utf-8><title>torchscope: opening Perfetto</title>" +
    `<meta http-equiv="refresh" content="0;url=${quoted}">` +
    `<script>location.replace(${script})</script>` +
    `<a href="${quoted}">Open the trace in Perfetto</a>`
  );
}

/** Write the page for `link` under `parent` (created 0700 if missing); returns its path. */
export function writeRedirectPage(parent: string, link: string): string {
  fs.mkdirSync(parent, { recursive: true, mode: 0o700 });
  const folder = fs.mkdtempSync(path.join(parent, "open-")); // 0700
  const page = path.join(folder, "open-trace.html");
  fs.writeFileSync(page, redirectHtml(link), { mode: 0o600, flag: "wx" });
  return page;
}

/** Delete the page and its folder (missing is fine). */
export function removeRedirectPage(page: string): void {
  fs.rmSync(path.dirname(page), { recursive: true, force: true });
}
