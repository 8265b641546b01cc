/**
 * Open a trace in the Perfetto UI inside VS Code (DESIGN.md §5): a webview embeds the UI in an
 * iframe and, after Perfetto's PING/PONG handshake, posts the trace bytes, which the extension
 * reads on the workspace side with `workspace.fs` — so it works over Remote-SSH with no port.
 */
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { traceInfo } from "./log";

function webviewHtml(origin: string, nonce: string, cspSource: string): string {
  const embed = `${origin}/#!/?mode=embedded&hideSidebar=false`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${origin}; style-src 'unsafe-inline' ${cspSource}; script-src 'nonce-${nonce}';">
<style>html,body,iframe{margin:0;padding:0;border:0;width:100%;height:100%;overflow:hidden}
#status{position:absolute;z-index:1;top:4px;right:8px;padding:2px 6px;font:12px sans-serif;color:var(--vscode-foreground);background:var(--vscode-editor-background)}#status:empty{display:none}</style></head>
<body><div id="status">Loading Perfetto UI from ${origin}…</div>
<iframe id="perfetto" src="${embed}" allow="clipboard-write"></iframe>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const frame = document.getElementById('perfetto');
const status = document.getElementById('status');
const origin = ${JSON.stringify(origin)};
let trace = null, ready = false, sent = false, timer = null;
function send() {
  if (!ready || !trace || sent) return;
  sent = true;
  frame.contentWindow.postMessage({perfetto: {buffer: trace.buffer, title: trace.title, fileName: trace.fileName, keepApiOpen: true}}, origin);
  status.textContent = '';
}
window.addEventListener('message', (e) => {
  if (e.origin === origin && e.data === 'PONG') {
    ready = true; clearInterval(timer); send(); return;
  }
  const msg = e.data;
  if (msg && msg.type === 'trace') {
    const b = msg.bytes instanceof Uint8Array ? msg.bytes : new Uint8Array(msg.bytes);
    trace = {buffer: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength), title: msg.title, fileName: msg.fileName};
    send();
  }
});
frame.addEventListener('load', () => {
  timer = setInterval(() => frame.contentWindow.postMessage('PING', origin), 250);
  setTimeout(() => { if (!ready) { clearInterval(timer); status.textContent = 'Perfetto UI did not answer from ' + origin + ' (offline? set torchscope.perfetto.origin to a self-hosted UI)'; vscode.postMessage({type: 'timeout'}); } }, 30000);
});
vscode.postMessage({type: 'ready'});
</script></body></html>`;
}

export async function openTraceInPerfetto(trace: vscode.Uri, origin: string): Promise<void> {
  const bytes = await vscode.workspace.fs.readFile(trace);
  const fileName = path.basename(trace.path);
  const panel = vscode.window.createWebviewPanel("torchscope.perfetto", `Perfetto: ${fileName}`, vscode.ViewColumn.Active, {
    enableScripts: true,
    retainContextWhenHidden: true,
  });
  const nonce = randomBytes(16).toString("hex");
  panel.webview.onDidReceiveMessage((msg: { type?: string }) => {
    if (msg.type === "ready") {
      void panel.webview.postMessage({ type: "trace", bytes, title: fileName, fileName });
    } else if (msg.type === "timeout") {
      traceInfo(`Perfetto UI at ${origin} did not answer; set torchscope.perfetto.origin for offline use`);
    }
  });
  panel.webview.html = webviewHtml(origin, nonce, panel.webview.cspSource);
  traceInfo(`opened ${trace.fsPath} (${bytes.byteLength} bytes) in Perfetto (${origin})`);
}
