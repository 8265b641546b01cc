/**
 * The trace commands: open a trace in Perfetto (panel or browser), copy its path, reveal it,
 * analyse a trace file. Each acts on the trace named by its argument, else the latest run's.
 */
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import type { CommandRow } from "./commandRow";
import { ClientCommands, SETTINGS_SECTION, ServerCommands } from "./constants";
import { showLog, traceError, traceInfo } from "./log";
import { PerfettoViews } from "./perfetto";
import { runWithProgress } from "./progress";
import { reportHeadline } from "./report";
import { resolveSettings } from "./settings";

export class TraceCommands {
  /** The trace of the latest run per document URI, and of the latest run of all. */
  private readonly results = new Map<string, string>();
  private lastTrace: string | undefined;
  private readonly perfetto: PerfettoViews;

  /** `pageFolder`: where Open trace in browser writes its private redirect pages. */
  constructor(
    private readonly host: { clientOrExplain(): Promise<LanguageClient | undefined> },
    pageFolder?: string,
  ) {
    this.perfetto = new PerfettoViews(pageFolder);
  }

  rows(): CommandRow[] {
    return [
      { id: ClientCommands.openTrace, run: (arg) => this.openTrace(arg) },
      { id: ClientCommands.openTraceInBrowser, run: (arg) => this.withTrace(arg, "open in the browser", (t, o) => this.perfetto.openInBrowser(t, o)) },
      { id: ClientCommands.copyTracePath, run: (arg) => this.withTrace(arg, "copy the path of", (t) => this.perfetto.copyPath(t)) },
      { id: ClientCommands.revealTraceFile, run: (arg) => this.withTrace(arg, "reveal", (t) => this.perfetto.reveal(t)) },
      { id: ClientCommands.analyzeTraceFile, run: (arg) => this.analyzeTraceFile(arg) },
    ];
  }

  /** A run of `uri` wrote `tracePath` (the latest trace from now on). */
  remember(uri: string, tracePath: string | undefined): void {
    if (tracePath !== undefined) {
      this.results.set(uri, tracePath);
      this.lastTrace = tracePath;
    }
  }

  /** Forget the traces of `uri` (all of them when undefined). */
  forget(uri: string | undefined): void {
    if (uri === undefined) {
      this.results.clear();
    } else {
      this.results.delete(uri);
    }
  }

  dispose(): void {
    this.perfetto.dispose();
  }

  private async pickTrace(title: string): Promise<vscode.Uri | undefined> {
    const picked = await vscode.window.showOpenDialog({
      title,
      canSelectMany: false,
      filters: { "Chrome trace": ["json", "gz"], "All files": ["*"] },
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    return picked?.[0];
  }

  private traceArg(arg: unknown): vscode.Uri | undefined {
    if (arg instanceof vscode.Uri) {
      return arg;
    }
    if (typeof arg === "string") {
      return vscode.Uri.file(arg);
    }
    if (typeof arg === "object" && arg !== null) {
      const p = (arg as { path?: unknown }).path;
      if (typeof p === "string") {
        return vscode.Uri.file(p);
      }
      const uri = (arg as { uri?: unknown }).uri;
      if (typeof uri === "string") {
        const last = this.results.get(uri);
        return last !== undefined ? vscode.Uri.file(last) : undefined;
      }
    }
    return undefined;
  }

  /** The trace named by `arg` (`{path}`, a Uri, a path), else the latest run's, else one picked. */
  private async withTrace(
    arg: unknown,
    verb: string,
    action: (trace: vscode.Uri, perfettoOrigin: string) => Promise<void>,
  ): Promise<void> {
    let trace = this.traceArg(arg) ?? (this.lastTrace !== undefined ? vscode.Uri.file(this.lastTrace) : undefined);
    trace ??= await this.pickTrace(`torchscope: ${verb} a trace`);
    if (trace === undefined) {
      return;
    }
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION));
    await action(trace, settings.perfettoOrigin);
  }

  async openTrace(arg: unknown): Promise<void> {
    await this.withTrace(arg, "open in Perfetto", (t, o) => this.perfetto.openInPanel(t, o));
  }

  async analyzeTraceFile(arg: unknown): Promise<void> {
    const trace = this.traceArg(arg) ?? (await this.pickTrace("torchscope: analyze a trace file"));
    if (trace === undefined) {
      return;
    }
    const client = await this.host.clientOrExplain();
    if (client === undefined) {
      return;
    }
    const name = vscode.workspace.asRelativePath(trace);
    const result = await runWithProgress(client, `torchscope: analyzing ${name}`, ServerCommands.analyzeTrace, {
      path: trace.fsPath,
    });
    if (result === "cancelled") {
      return;
    }
    if (!result.ok) {
      traceError(`analyze ${trace.fsPath}: ${result.error}`);
      void vscode.window.showErrorMessage(`torchscope: ${result.error}`);
      return;
    }
    this.lastTrace = trace.fsPath;
    traceInfo(`analyze ${trace.fsPath}: ${JSON.stringify(result.report)}`);
    const headline = reportHeadline(result.report) ?? "analysed (details in the log)";
    const choice = await vscode.window.showInformationMessage(`torchscope: ${name}: ${headline}`, "Open Trace", "Show Log");
    if (choice === "Open Trace") {
      await this.openTrace(trace);
    } else if (choice === "Show Log") {
      showLog();
    }
  }
}
