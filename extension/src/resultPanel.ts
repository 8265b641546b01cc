/**
 * A small read-only webview for torchscope's tables and charts (the torch.compile comparison,
 * the size sweep). The page runs no script: its Content-Security-Policy allows inline styles
 * only. The text is the server's Markdown (one renderer, in Python), turned into HTML by VS
 * Code's own Markdown engine (`markdown.api.render`).
 */
import * as vscode from "vscode";
import { escapeHtml } from "./html";
import { traceError } from "./log";

const STYLE = `body{font-family:var(--vscode-font-family);color:var(--vscode-foreground);padding:0 16px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid var(--vscode-panel-border,#8884);padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.cross td{font-weight:bold}
.err{color:var(--vscode-errorForeground)}.verdict{font-weight:bold}.path{opacity:.8}
.chart svg{max-width:100%;height:auto;background:#fff;border-radius:4px}pre{white-space:pre-wrap}`;

const panels = new Map<string, vscode.WebviewPanel>();

/** Show `body` in the panel for `key` (one per function and kind), reusing it when open. */
export function showResultPanel(key: string, title: string, body: string): vscode.WebviewPanel {
  let panel = panels.get(key);
  if (panel === undefined) {
    panel = vscode.window.createWebviewPanel("torchscope.results", title, vscode.ViewColumn.Beside, {
      enableScripts: false,
      enableFindWidget: true,
    });
    const created = panel;
    panels.set(key, created);
    created.onDidDispose(() => panels.delete(key));
  } else {
    panel.title = title;
    panel.reveal(vscode.ViewColumn.Beside, true);
  }
  panel.webview.html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:;">
<style>${STYLE}</style></head><body>
${body}
</body></html>`;
  return panel;
}

/** `markdown` as HTML by VS Code's Markdown extension; escaped plain text if it is unavailable. */
export async function markdownHtml(markdown: string): Promise<string> {
  try {
    const html = await vscode.commands.executeCommand("markdown.api.render", markdown);
    if (typeof html === "string") {
      return html;
    }
  } catch (e) {
    traceError("markdown.api.render", e);
  }
  return `<pre>${escapeHtml(markdown)}</pre>`;
}
