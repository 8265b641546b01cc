/**
 * The Perfetto webview's page (DESIGN.md §5), with no `vscode` import so it runs in unit tests:
 * the HTML, and `perfettoPageMain`, the script that runs in the webview. It embeds the Perfetto
 * UI (`<base>/#!/?mode=embedded`) in an iframe, PINGs it until it answers PONG, then posts
 * `{perfetto: {buffer, title, fileName, keepApiOpen: true}}` with the trace bytes the extension
 * sent (read on the workspace side, so no port is needed, local or over Remote-SSH).
 */
import { escapeHtml } from "./html";

/** Messages the page posts to the extension. */
export type PageToHost =
  | { type: "ready" }
  | { type: "pong" }
  | { type: "sent"; size: number }
  | { type: "slow" }
  | { type: "timeout" };

/** The message the extension posts to the page. */
export interface TraceMessage {
  type: "trace";
  bytes: Uint8Array | ArrayBuffer | number[];
  title: string;
  fileName: string;
}

export interface PerfettoPageConfig {
  /** Origin of the Perfetto UI (postMessage target and the only frame-src). */
  origin: string;
  /** The iframe's src. */
  embedUrl: string;
  pingIntervalMs: number;
  /** After this long without PONG, say so (and keep trying). */
  hintAfterMs: number;
  /** After this long without PONG, stop and say so. */
  giveUpAfterMs: number;
}

/** What the page script touches, passed in so it can run against fakes and in a real browser. */
export interface PageEnv {
  win: {
    addEventListener(type: "message", listener: (e: { data: unknown; origin: string; source: unknown }) => void): void;
    setInterval(handler: () => void, ms: number): unknown;
    clearInterval(id: unknown): void;
    setTimeout(handler: () => void, ms: number): unknown;
    clearTimeout(id: unknown): void;
  };
  frame: { contentWindow: { postMessage(message: unknown, targetOrigin: string): void } | null };
  host: { postMessage(message: PageToHost): void };
  setStatus(text: string): void;
}

/**
 * The webview's script. Serialised with `Function.prototype.toString` into the page, so it must
 * stay self-contained: no imports, no references to anything outside its body.
 */
export function perfettoPageMain(config: PerfettoPageConfig, env: PageEnv): void {
  let trace: { buffer: ArrayBuffer; title: string; fileName: string } | undefined;
  let ready = false;
  let sent = false;
  let stopped = false;
  const frameWindow = (): PageEnv["frame"]["contentWindow"] => env.frame.contentWindow;

  const toArrayBuffer = (bytes: unknown): ArrayBuffer | undefined => {
    if (bytes instanceof ArrayBuffer) {
      return bytes;
    }
    if (ArrayBuffer.isView(bytes)) {
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    }
    if (Array.isArray(bytes)) {
      return Uint8Array.from(bytes as number[]).buffer;
    }
    // A Node Buffer that went through JSON: {type: "Buffer", data: [...]}.
    const data = typeof bytes === "object" && bytes !== null ? (bytes as { data?: unknown }).data : undefined;
    if (Array.isArray(data)) {
      return Uint8Array.from(data as number[]).buffer;
    }
    return undefined;
  };

  const ping = env.win.setInterval(() => {
    frameWindow()?.postMessage("PING", config.origin);
  }, config.pingIntervalMs);
  const hint = env.win.setTimeout(() => {
    if (!ready) {
      env.setStatus(
        `Waiting for the Perfetto UI at ${config.origin}… (offline? set torchscope.perfetto.origin to a self-hosted UI, or use 'Open trace in browser')`,
      );
      env.host.postMessage({ type: "slow" });
    }
  }, config.hintAfterMs);
  const giveUp = env.win.setTimeout(() => {
    if (!ready) {
      stopped = true;
      env.win.clearInterval(ping);
      env.setStatus(
        `The Perfetto UI at ${config.origin} did not answer. Check the network, set torchscope.perfetto.origin to a self-hosted UI, or use 'Open trace in browser'.`,
      );
      env.host.postMessage({ type: "timeout" });
    }
  }, config.giveUpAfterMs);

  const send = (): void => {
    const target = frameWindow();
    if (!ready || trace === undefined || sent || target === null) {
      return;
    }
    sent = true;
    target.postMessage(
      { perfetto: { buffer: trace.buffer, title: trace.title, fileName: trace.fileName, keepApiOpen: true } },
      config.origin,
    );
    env.setStatus("");
    env.host.postMessage({ type: "sent", size: trace.buffer.byteLength });
  };

  env.win.addEventListener("message", (e) => {
    const fromPerfetto = e.source !== null && e.source === frameWindow();
    if (fromPerfetto) {
      if (e.origin === config.origin && e.data === "PONG" && !ready && !stopped) {
        ready = true;
        env.win.clearInterval(ping);
        env.win.clearTimeout(hint);
        env.win.clearTimeout(giveUp);
        env.host.postMessage({ type: "pong" });
        send();
      }
      return;
    }
    const msg = e.data as Partial<TraceMessage> | null;
    if (msg !== null && typeof msg === "object" && msg.type === "trace") {
      const buffer = toArrayBuffer(msg.bytes);
      if (buffer !== undefined) {
        const title = typeof msg.title === "string" ? msg.title : "";
        trace = { buffer, title, fileName: typeof msg.fileName === "string" ? msg.fileName : "trace.json" };
        send();
      }
    }
  });
  env.setStatus(`Loading the Perfetto UI from ${config.origin}…`);
  env.host.postMessage({ type: "ready" });
}

/**
 * The trace bytes as a plain `Uint8Array` over exactly those bytes, for `webview.postMessage`:
 * VS Code transfers typed arrays by their constructor's name, so a Node `Buffer` (what
 * `workspace.fs.readFile` returns in a Node extension host) would go through JSON as
 * `{type: "Buffer", data: [...]}` — a huge array of numbers — and a view into a larger buffer
 * would carry the rest of that buffer along.
 */
export function plainBytes(raw: Uint8Array): Uint8Array {
  if (raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength) {
    return raw.constructor === Uint8Array ? raw : new Uint8Array(raw.buffer, 0, raw.byteLength);
  }
  return new Uint8Array(raw); // a copy of just these bytes
}

/** `{base, origin}` from the `torchscope.perfetto.origin` setting, or why it is unusable. */
export function parsePerfettoOrigin(setting: string): { base: string; origin: string } | { error: string } {
  const base = setting.trim().replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return { error: `torchscope.perfetto.origin must be an http(s) URL such as https://ui.perfetto.dev, got '${setting}'` };
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || /["'<>\s]/.test(base) || url.search !== "" || url.hash !== "") {
    return { error: `torchscope.perfetto.origin must be an http(s) URL such as https://ui.perfetto.dev, got '${setting}'` };
  }
  return { base, origin: url.origin };
}

export function embedUrl(base: string): string {
  return `${base}/#!/?mode=embedded&hideSidebar=false`;
}

export const DEFAULT_PAGE_TIMINGS = { pingIntervalMs: 250, hintAfterMs: 15_000, giveUpAfterMs: 120_000 } as const;

/** The webview's HTML: a status line, the Perfetto iframe and the page script (nonce'd). */
export function perfettoHtml(config: PerfettoPageConfig, nonce: string, cspSource: string): string {
  const script = `(${perfettoPageMain.toString()})(${JSON.stringify(config).replace(/</g, "\\u003c")}, {
  win: window,
  frame: document.getElementById("perfetto"),
  host: acquireVsCodeApi(),
  setStatus: (text) => { document.getElementById("status").textContent = text; },
});`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${config.origin}; style-src 'unsafe-inline' ${cspSource}; script-src 'nonce-${nonce}';">
<style>html,body,iframe{margin:0;padding:0;border:0;width:100%;height:100%;overflow:hidden}
#status{position:absolute;z-index:1;top:4px;right:8px;max-width:60%;padding:2px 6px;font:12px sans-serif;color:var(--vscode-foreground);background:var(--vscode-editor-background)}#status:empty{display:none}</style></head>
<body><div id="status"></div>
<iframe id="perfetto" src="${escapeHtml(config.embedUrl)}" allow="clipboard-write"></iframe>
<script nonce="${nonce}">${script}</script></body></html>`;
}

/**
 * A title that says which function and when: trace files from torchscope are named
 * `<file>.<qualname>.<YYYYMMDD-HHMMSS-mmm>.<pid>.pt.trace.json.gz`; other names are kept.
 */
export function traceTitle(fileName: string): string {
  const m = /^(.+)\.(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)-\d{3}\.\d+\.pt\.trace\.json(?:\.gz)?$/.exec(fileName);
  if (m === null) {
    return fileName;
  }
  const [, stem, y, mo, d, h, mi, s] = m;
  return `${stem} · ${y}-${mo}-${d} ${h}:${mi}:${s}`;
}
