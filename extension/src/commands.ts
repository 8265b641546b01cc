/** The client's commands (package.json `contributes.commands`). */
import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  type LanguageClient,
  LSPErrorCodes,
  ResponseError,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from "vscode-languageclient/node";
import { buildCallTemplate, callStateKey, decideCall, firstPlaceholderSelection, validateCallExpression } from "./callExpression";
import { CompareCommands } from "./compareCommands";
import { ClientCommands, Methods, ServerCommands, SETTINGS_SECTION } from "./constants";
import { errorText, showLog, traceError, traceInfo } from "./log";
import { PerfettoViews } from "./perfetto";
import { parseLocationArg, reportHeadline, reportTracePath } from "./report";
import type { ServerManager } from "./server";
import { buildProfileArgs, resolveSettings } from "./settings";
import type { StatusBar } from "./statusBar";
import type { CommandResult, TargetInfo } from "./types";

interface Located {
  document: vscode.TextDocument;
  line: number;
}

interface LastResult {
  qualname: string;
  headline: string | undefined;
  tracePath: string | undefined;
}

export class Commands {
  /** Last result per document URI, and the trace of the latest run. */
  private readonly results = new Map<string, LastResult>();
  private lastTrace: string | undefined;
  private readonly perfetto: PerfettoViews;
  /** Compare with torch.compile, profile across sizes (compareCommands.ts). */
  private readonly compare: CompareCommands;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly server: ServerManager,
    private readonly status: StatusBar,
  ) {
    this.compare = new CompareCommands(context, this, status);
    const storage = context.globalStorageUri;
    this.perfetto = new PerfettoViews(storage.scheme === "file" ? vscode.Uri.joinPath(storage, "open").fsPath : undefined);
  }

  register(): vscode.Disposable[] {
    const done = this.server.onProfileDone(({ uri, report }) => {
      const tracePath = reportTracePath(report);
      if (tracePath !== undefined) {
        this.lastTrace = tracePath;
        const previous = this.results.get(uri);
        this.results.set(uri, { qualname: previous?.qualname ?? "", headline: reportHeadline(report), tracePath });
      }
    });
    const reg = (id: string, fn: (...args: unknown[]) => Promise<void>): vscode.Disposable =>
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          await fn(...args);
        } catch (e) {
          traceError(`${id} failed`, e);
          void vscode.window.showErrorMessage(`torchscope: ${errorText(e)}`, "Show Log").then((c) => {
            if (c !== undefined) {
              showLog();
            }
          });
        }
      });
    return [
      done,
      reg(ClientCommands.profileFunction, (arg) => this.profileFunction(arg)),
      reg(ClientCommands.editCallExpression, (arg) => this.editCallExpression(arg)),
      reg(ClientCommands.openTrace, (arg) => this.openTrace(arg)),
      reg(ClientCommands.openTraceInBrowser, (arg) => this.withTrace(arg, "open in the browser", (t, o) => this.perfetto.openInBrowser(t, o))),
      reg(ClientCommands.copyTracePath, (arg) => this.withTrace(arg, "copy the path of", (t) => this.perfetto.copyPath(t))),
      reg(ClientCommands.revealTraceFile, (arg) => this.withTrace(arg, "reveal", (t) => this.perfetto.reveal(t))),
      new vscode.Disposable(() => {
        this.perfetto.dispose();
      }),
      reg(ClientCommands.analyzeTraceFile, (arg) => this.analyzeTraceFile(arg)),
      reg(ClientCommands.clearResults, (arg) => this.clearResults(arg)),
      reg(ClientCommands.restartServer, () => this.server.restart("requested by the user")),
      reg(ClientCommands.showLog, () => {
        showLog();
        return Promise.resolve();
      }),
      reg(ClientCommands.compareCompile, (arg) => this.compare.compareCompile(arg)),
      reg(ClientCommands.profileSizes, (arg) => this.compare.profileSizes(arg)),
      reg(ClientCommands.openGeneratedCode, (arg) => this.compare.openGeneratedCode(arg)),
    ];
  }

  /**
   * Where to act: `{uri, line}` from a CodeLens or the server; a `Uri` from the editor's context
   * menu (then the cursor's line); nothing from the palette (the active editor's cursor).
   */
  async locate(arg: unknown): Promise<Located | undefined> {
    const editor = vscode.window.activeTextEditor;
    let uri: vscode.Uri | undefined;
    let line: number | undefined;
    if (arg instanceof vscode.Uri) {
      uri = arg;
    } else {
      const parsed = parseLocationArg(arg);
      uri = parsed.uri !== undefined ? vscode.Uri.parse(parsed.uri) : undefined;
      line = parsed.line;
    }
    if (uri === undefined) {
      if (editor === undefined) {
        return undefined;
      }
      return { document: editor.document, line: editor.selection.active.line };
    }
    const document =
      editor?.document.uri.toString() === uri.toString() ? editor.document : await vscode.workspace.openTextDocument(uri);
    if (line === undefined) {
      line = editor?.document.uri.toString() === uri.toString() ? editor.selection.active.line : 0;
    }
    return { document, line };
  }

  async clientOrExplain(): Promise<LanguageClient | undefined> {
    const client = await this.server.ready();
    if (client === undefined && this.server.state !== "unavailable") {
      const choice = await vscode.window.showErrorMessage(
        "torchscope: the language server is not running.",
        "Restart Server",
        "Show Log",
      );
      if (choice === "Restart Server") {
        await this.server.restart("requested by the user");
      } else if (choice === "Show Log") {
        showLog();
      }
    }
    return client;
  }

  async target(client: LanguageClient, located: Located): Promise<TargetInfo | undefined> {
    const target = await client.sendRequest<TargetInfo | null>(Methods.target, {
      uri: located.document.uri.toString(),
      line: located.line,
    });
    if (target === null) {
      void vscode.window.showInformationMessage(
        `torchscope: no Python function encloses line ${located.line + 1} of ${vscode.workspace.asRelativePath(located.document.uri)}. Put the cursor inside a def.`,
      );
      return undefined;
    }
    return target;
  }

  async askCall(target: TargetInfo, initial: string): Promise<string | undefined> {
    const selection = firstPlaceholderSelection(initial);
    const value = await vscode.window.showInputBox({
      title: `torchscope: call expression for ${target.qualname}`,
      prompt:
        "A Python call evaluated once in the module's namespace; only the final call is timed. Remembered for this function (change it with 'Edit call expression…').",
      value: initial,
      valueSelection: selection,
      placeHolder: "fn(torch.randn(64, 64), torch.randn(64, 64), torch.randn(64))",
      ignoreFocusOut: true,
      validateInput: validateCallExpression,
    });
    return value?.trim();
  }

  async profileFunction(arg: unknown): Promise<void> {
    const located = await this.locate(arg);
    if (located === undefined) {
      void vscode.window.showWarningMessage("torchscope: open a Python file and put the cursor inside a function to profile it.");
      return;
    }
    if (located.document.isDirty) {
      // The worker imports the file from disk.
      await located.document.save();
    }
    const client = await this.clientOrExplain();
    if (client === undefined) {
      return;
    }
    const target = await this.target(client, located);
    if (target === undefined) {
      return;
    }
    const key = callStateKey(located.document.uri.toString(), target.qualname);
    const decision = decideCall(target, this.context.workspaceState.get<string>(key));
    let call: string | undefined;
    if (decision.kind === "remembered") {
      call = decision.call;
    } else if (decision.kind === "ask") {
      call = await this.askCall(target, decision.template);
      if (call === undefined) {
        traceInfo(`profile ${target.qualname}: no call expression given`);
        return;
      }
      await this.context.workspaceState.update(key, call);
    }
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    const args = buildProfileArgs(located.document.uri.toString(), target.line, call, settings);
    traceInfo(`profile ${target.qualname} (${decision.kind === "none" ? decision.reason : decision.kind}): ${JSON.stringify(args)}`);

    this.status.set({ kind: "profiling", target: target.qualname });
    let result: CommandResult | "cancelled";
    try {
      result = await this.runWithProgress(client, `torchscope: profiling ${target.qualname}`, ServerCommands.profile, args);
    } catch (e) {
      this.status.set({ kind: "error", message: `${target.qualname}: ${errorText(e)}` });
      throw e;
    }
    if (result === "cancelled") {
      traceInfo(`profile ${target.qualname}: cancelled`);
      this.status.set({ kind: "idle", detail: "cancelled" });
    } else if (result.ok) {
      const headline = reportHeadline(result.report);
      const tracePath = reportTracePath(result.report);
      this.results.set(located.document.uri.toString(), { qualname: target.qualname, headline, tracePath });
      this.lastTrace = tracePath ?? this.lastTrace;
      traceInfo(`profile ${target.qualname}: ${headline ?? "done"}${tracePath !== undefined ? ` (trace ${tracePath})` : ""}`);
      this.status.set({ kind: "idle", detail: `${target.qualname}: ${headline ?? "done"}` });
    } else {
      // The server publishes an Error diagnostic on the def line and shows the message.
      traceError(`profile ${target.qualname}: ${result.error}`);
      this.status.set({ kind: "error", message: `${target.qualname}: ${result.error}` });
    }
  }

  /** `workspace/executeCommand` with a work-done token shown as a cancellable notification. */
  runWithProgress(
    client: LanguageClient,
    title: string,
    command: string,
    argument: object,
  ): Thenable<CommandResult | "cancelled"> {
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        const workDoneToken = `torchscope-${randomUUID()}`;
        let last = 0;
        const sub = client.onProgress(
          WorkDoneProgress.type,
          workDoneToken,
          (value: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
            if (value.kind === "end") {
              return;
            }
            // The notification's own title already names the job; show the server's messages only.
            const message = value.message;
            let increment: number | undefined;
            if (value.percentage !== undefined && value.percentage > last) {
              increment = value.percentage - last;
              last = value.percentage;
            }
            if (message !== undefined) {
              traceInfo(`progress: ${message}`);
            }
            progress.report({ message, increment });
          },
        );
        try {
          const result = (await client.sendRequest(
            ExecuteCommandRequest.type,
            { command, arguments: [argument], workDoneToken },
            token,
          )) as CommandResult | null;
          if (token.isCancellationRequested) {
            return "cancelled";
          }
          return result ?? { ok: false, error: "the server returned no result" };
        } catch (e) {
          if (token.isCancellationRequested || (e instanceof ResponseError && e.code === LSPErrorCodes.RequestCancelled)) {
            return "cancelled";
          }
          throw e;
        } finally {
          sub.dispose();
        }
      },
    );
  }

  async editCallExpression(arg: unknown): Promise<void> {
    const located = await this.locate(arg);
    if (located === undefined) {
      void vscode.window.showWarningMessage("torchscope: open a Python file and put the cursor inside a function.");
      return;
    }
    const client = await this.clientOrExplain();
    if (client === undefined) {
      return;
    }
    const target = await this.target(client, located);
    if (target === undefined) {
      return;
    }
    if (target.directive !== null) {
      const choice = await vscode.window.showInformationMessage(
        `torchscope: ${target.qualname} takes its call from the '# torchscope:' comment above it (${target.directive}); edit that comment instead.`,
        "Go to Comment",
      );
      if (choice !== undefined) {
        const editor = await vscode.window.showTextDocument(located.document);
        const pos = new vscode.Position(Math.max(0, target.line - 1), 0);
        editor.selection = new vscode.Selection(pos, pos);
        editor.revealRange(new vscode.Range(pos, pos));
      }
      return;
    }
    const key = callStateKey(located.document.uri.toString(), target.qualname);
    const current = this.context.workspaceState.get<string>(key) ?? buildCallTemplate(target);
    const value = await this.askCall(target, current);
    if (value === undefined) {
      return;
    }
    await this.context.workspaceState.update(key, value);
    traceInfo(`call expression for ${target.qualname}: ${value}`);
    const choice = await vscode.window.showInformationMessage(`torchscope: saved the call for ${target.qualname}.`, "Profile Now");
    if (choice !== undefined) {
      await this.profileFunction({ uri: located.document.uri.toString(), line: target.line });
    }
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
        const last = this.results.get(uri)?.tracePath;
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
    const client = await this.clientOrExplain();
    if (client === undefined) {
      return;
    }
    const name = vscode.workspace.asRelativePath(trace);
    const result = await this.runWithProgress(client, `torchscope: analyzing ${name}`, ServerCommands.analyzeTrace, {
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

  async clearResults(arg: unknown): Promise<void> {
    const { uri } = parseLocationArg(arg instanceof vscode.Uri ? arg.toString() : arg);
    if (uri === undefined) {
      this.results.clear();
    } else {
      this.results.delete(uri);
    }
    const client = await this.server.ready();
    if (client === undefined) {
      return;
    }
    await client.sendRequest(ExecuteCommandRequest.type, {
      command: ServerCommands.clear,
      arguments: [uri !== undefined ? { uri } : {}],
    });
    this.status.set({ kind: "idle", detail: "results cleared" });
  }
}
