/**
 * Traces in the Perfetto UI (DESIGN.md §5).
 *
 * - **Open trace**: a webview panel embeds the UI and hands it the trace bytes, read here on the
 *   workspace side with `workspace.fs` — no port, so it works the same over Remote-SSH. The page
 *   and its script are in perfettoPage.ts.
 * - **Open trace in browser**: serves the trace once from 127.0.0.1:9001 (traceServer.ts) and
 *   opens `<origin>/#!/?url=…` through `asExternalUri`; when the forwarded local port is not 9001
 *   the UI could not fetch it, so it says why and opens the panel instead. When the browser is
 *   on this machine the link (its path holds the server's token) never reaches a command line:
 *   the browser gets a private redirect page (redirectPage.ts). Over Remote-SSH the local VS
 *   Code hands the link to the local OS opener, whose command line shows it briefly.
 * - **Copy trace path**, **Reveal trace file**.
 */
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { errorText, traceInfo, traceWarn } from "./log";
import {
  DEFAULT_PAGE_TIMINGS,
  embedUrl,
  type PageToHost,
  parsePerfettoOrigin,
  perfettoHtml,
  plainBytes,
  traceTitle,
} from "./perfettoPage";
import { removeRedirectPage, writeRedirectPage } from "./redirectPage";
import {
  DEFAULT_SERVE_TIMEOUT_MS,
  LOOPBACK,
  PERFETTO_PORT,
  perfettoLink,
  PortInUseError,
  type RunningTraceServer,
  startTraceServer,
} from "./traceServer";

function uiBase(setting: string): { base: string; origin: string } {
  const parsed = parsePerfettoOrigin(setting);
  if ("error" in parsed) {
    throw new Error(parsed.error);
  }
  return parsed;
}

async function readTrace(trace: vscode.Uri): Promise<Uint8Array> {
  try {
    return await vscode.workspace.fs.readFile(trace);
  } catch (e) {
    throw new Error(`cannot read the trace ${trace.fsPath}: ${errorText(e)}`);
  }
}

/** Is `uri` the local end of port 9001 on loopback, where the Perfetto UI can fetch from? */
export function isLocalPerfettoPort(uri: { scheme: string; authority: string }): boolean {
  const m = /^(127\.0\.0\.1|localhost|\[::1\]):(\d+)$/.exec(uri.authority);
  return uri.scheme === "http" && m !== null && Number(m[2]) === PERFETTO_PORT;
}

export class PerfettoViews implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();
  private served: RunningTraceServer | undefined;

  /** `pageFolder`: where private redirect pages go (the extension's global storage). */
  constructor(private readonly pageFolder?: string) {}

  /** The trace in a webview panel with the Perfetto UI (reuses the trace's open panel). */
  async openInPanel(trace: vscode.Uri, originSetting: string): Promise<void> {
    const { base, origin } = uiBase(originSetting);
    const key = trace.toString();
    const open = this.panels.get(key);
    if (open !== undefined) {
      open.reveal();
      return;
    }
    const bytes = plainBytes(await readTrace(trace));
    const fileName = path.basename(trace.path);
    const title = traceTitle(fileName);
    const panel = vscode.window.createWebviewPanel("torchscope.perfetto", `Perfetto: ${title}`, vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [],
    });
    this.panels.set(key, panel);
    panel.onDidDispose(() => this.panels.delete(key));
    panel.webview.onDidReceiveMessage((msg: PageToHost) => {
      switch (msg.type) {
        case "ready":
          void panel.webview.postMessage({ type: "trace", bytes, title, fileName });
          break;
        case "pong":
          traceInfo(`Perfetto UI at ${origin} answered`);
          break;
        case "sent":
          traceInfo(`sent ${trace.fsPath} (${msg.size} bytes) to the Perfetto UI`);
          break;
        case "slow":
          traceWarn(`Perfetto UI at ${origin} has not answered yet`);
          break;
        case "timeout":
          void this.explainNoAnswer(trace, origin, originSetting);
          break;
      }
    });
    const nonce = randomBytes(16).toString("hex");
    panel.webview.html = perfettoHtml({ ...DEFAULT_PAGE_TIMINGS, origin, embedUrl: embedUrl(base) }, nonce, panel.webview.cspSource);
    traceInfo(`opened ${trace.fsPath} (${bytes.byteLength} bytes) in Perfetto (${base})`);
  }

  private async explainNoAnswer(trace: vscode.Uri, origin: string, originSetting: string): Promise<void> {
    traceWarn(`Perfetto UI at ${origin} did not answer`);
    const choice = await vscode.window.showWarningMessage(
      `torchscope: the Perfetto UI at ${origin} did not load (offline?). Set torchscope.perfetto.origin to a self-hosted UI, or open the trace in your browser.`,
      "Open in Browser",
      "Open Settings",
    );
    if (choice === "Open in Browser") {
      await this.openInBrowser(trace, originSetting);
    } else if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "torchscope.perfetto.origin");
    }
  }

  /** Serve the trace once on 127.0.0.1:9001 and open the Perfetto UI in the browser. */
  async openInBrowser(trace: vscode.Uri, originSetting: string): Promise<void> {
    const { base, origin } = uiBase(originSetting);
    const bytes = await readTrace(trace);
    await this.served?.close(); // one at a time: an earlier one would hold the port
    let server: RunningTraceServer;
    try {
      server = await startTraceServer({ data: bytes, name: path.basename(trace.path), origin, port: PERFETTO_PORT });
    } catch (e) {
      if (!(e instanceof PortInUseError)) {
        throw e;
      }
      traceWarn(e.message);
      void vscode.window.showWarningMessage(`torchscope: ${e.message} Showing it in a VS Code panel instead.`);
      await this.openInPanel(trace, originSetting);
      return;
    }
    this.served = server;
    const local = await vscode.env.asExternalUri(vscode.Uri.parse(`http://${LOOPBACK}:${PERFETTO_PORT}/`));
    if (!isLocalPerfettoPort(local)) {
      await server.close();
      const why =
        `VS Code forwarded port ${PERFETTO_PORT} to ${local.scheme}://${local.authority} on this computer, but the Perfetto UI only ` +
        `loads traces from http://127.0.0.1:${PERFETTO_PORT} (is port ${PERFETTO_PORT} taken on this computer?).`;
      traceWarn(why);
      void vscode.window.showWarningMessage(`torchscope: ${why} Showing the trace in a VS Code panel instead.`);
      await this.openInPanel(trace, originSetting);
      return;
    }
    const link = perfettoLink(base, server.url);
    traceInfo(`serving ${trace.fsPath} for Perfetto at ${server.url} (once, at most ${DEFAULT_SERVE_TIMEOUT_MS / 1000} s): ${link}`);
    void server.done.then((outcome) => {
      if (this.served === server) {
        this.served = undefined;
      }
      if (outcome === "served") {
        traceInfo(`Perfetto fetched ${trace.fsPath}; stopped serving`);
      } else if (outcome === "timeout") {
        traceWarn(`nothing fetched ${trace.fsPath} within ${DEFAULT_SERVE_TIMEOUT_MS / 1000} s; stopped serving`);
      }
    });
    const target = this.browserTarget(link);
    if (target === undefined) {
      await server.close();
      await this.openInPanel(trace, originSetting);
      return;
    }
    if (target.scheme === "file") {
      void server.done.then(() => {
        removeRedirectPage(target.fsPath);
      });
    }
    const opened = await vscode.env.openExternal(target);
    if (!opened) {
      await server.close();
      traceWarn(`the browser did not open ${link}`);
    }
  }

  /**
   * What to hand to the OS opener for `link`: a private redirect page when the browser runs on
   * this machine (desktop VS Code, no remote), so the token never shows in a command line;
   * otherwise the link itself (the opener is on the local computer over Remote-SSH; a web UI
   * opens a tab). Undefined when the page cannot be written: the caller shows the panel.
   */
  private browserTarget(link: string): vscode.Uri | undefined {
    const local = vscode.env.remoteName === undefined && vscode.env.uiKind === vscode.UIKind.Desktop;
    if (!local) {
      return vscode.Uri.parse(link);
    }
    try {
      if (this.pageFolder === undefined) {
        throw new Error("no extension storage folder");
      }
      return vscode.Uri.file(writeRedirectPage(this.pageFolder, link));
    } catch (e) {
      const why = `cannot write the private page that opens the browser (${errorText(e)})`;
      traceWarn(why);
      void vscode.window.showWarningMessage(`torchscope: ${why}. Showing the trace in a VS Code panel instead.`);
      return undefined;
    }
  }

  async copyPath(trace: vscode.Uri): Promise<void> {
    await vscode.env.clipboard.writeText(trace.fsPath);
    traceInfo(`copied trace path ${trace.fsPath}`);
    void vscode.window.showInformationMessage(`torchscope: copied ${trace.fsPath}`);
  }

  async reveal(trace: vscode.Uri): Promise<void> {
    if (vscode.env.remoteName === undefined) {
      await vscode.commands.executeCommand("revealFileInOS", trace);
      return;
    }
    // The file is on the remote host: the local file manager cannot show it.
    const choice = await vscode.window.showInformationMessage(
      `torchscope: the trace is on the ${vscode.env.remoteName} host: ${trace.fsPath}`,
      "Copy Path",
    );
    if (choice !== undefined) {
      await this.copyPath(trace);
    }
  }

  dispose(): void {
    void this.served?.close();
    this.served = undefined;
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
    this.panels.clear();
  }
}
