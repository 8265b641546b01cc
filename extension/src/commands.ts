/**
 * The client's commands (constants.ts `ClientCommands`; package.json `contributes.commands` for
 * those in the palette or a menu): profile a function, its call expression, clearing, the
 * server and the log here; trace commands in traceCommands.ts, the torch.compile comparison
 * and the size sweep in compareCommands.ts. Each module lists its `CommandRow`s.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import { buildCallTemplate, callStateKey, decideCall, firstPlaceholderSelection, validateCallExpression } from "./callExpression";
import type { CommandRow } from "./commandRow";
import { type ChosenCall, CompareCommands, type Located, type Started } from "./compareCommands";
import { ClientCommands, Methods, ServerCommands, SETTINGS_SECTION } from "./constants";
import { errorText, showLog, traceError, traceInfo } from "./log";
import { runWithProgress } from "./progress";
import { parseLocationArg, reportHeadline, reportTracePath } from "./report";
import { AttachCommands } from "./attachCommands";
import { RunCommands } from "./runCommands";
import type { ServerManager } from "./server";
import { buildProfileArgs, resolveSettings } from "./settings";
import type { StatusBar } from "./statusBar";
import { TraceCommands } from "./traceCommands";
import type { CommandResult, TargetInfo } from "./types";
import { walkthroughRows } from "./walkthrough";


/** Run a row's handler; a failure is logged and shown with a way to the log. */
function registerRow({ id, run }: CommandRow): vscode.Disposable {
  return vscode.commands.registerCommand(id, async (arg: unknown) => {
    try {
      await run(arg);
    } catch (e) {
      traceError(`${id} failed`, e);
      void vscode.window.showErrorMessage(`torchscope: ${errorText(e)}`, "Show Log").then((c) => {
        if (c !== undefined) {
          showLog();
        }
      });
    }
  });
}

export class Commands {
  /** Open, copy, reveal and analyse traces (traceCommands.ts). */
  private readonly traces: TraceCommands;
  /** Compare with torch.compile, profile across sizes (compareCommands.ts). */
  private readonly compare: CompareCommands;
  /** Profile this function in a run… (runCommands.ts). */
  private readonly run: RunCommands;
  private readonly attach: AttachCommands;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly server: ServerManager,
    private readonly status: StatusBar,
  ) {
    // private redirect pages for Open trace in browser go under the global storage (perfetto.ts)
    const storage = context.globalStorageUri;
    this.traces = new TraceCommands(this, storage.scheme === "file" ? vscode.Uri.joinPath(storage, "open").fsPath : undefined);
    this.compare = new CompareCommands(context, this, status);
    this.run = new RunCommands(context, this, status);
    this.attach = new AttachCommands(this, status);
  }

  /** Every client command: this module's rows, then those of the command modules. */
  register(): vscode.Disposable[] {
    const done = this.server.onProfileDone(({ uri, report }) => {
      this.traces.remember(uri, reportTracePath(report));
    });
    const rows: CommandRow[] = [
      { id: ClientCommands.profileFunction, run: (arg) => this.profileFunction(arg) },
      { id: ClientCommands.profileOnProcesses, run: (arg) => this.profileOnProcesses(arg) },
      { id: ClientCommands.editCallExpression, run: (arg) => this.editCallExpression(arg) },
      { id: ClientCommands.clearResults, run: (arg) => this.clearResults(arg) },
      { id: ClientCommands.restartServer, run: () => this.server.restart("requested by the user") },
      {
        id: ClientCommands.showLog,
        run: () => {
          showLog();
          return Promise.resolve();
        },
      },
      ...this.traces.rows(),
      ...this.compare.rows(),
      ...this.run.rows(),
      ...this.attach.rows(),
      ...walkthroughRows(this.context),
    ];
    const traces = new vscode.Disposable(() => {
      this.traces.dispose();
    });
    return [done, traces, ...rows.map(registerRow)];
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

  /** The function at `arg` (saved first: the worker imports the file from disk) and the
   * server, or undefined after telling the user why not. */
  async start(arg: unknown, what: string, save = true): Promise<Started | undefined> {
    const located = await this.locate(arg);
    if (located === undefined) {
      void vscode.window.showWarningMessage(`torchscope: open a Python file and put the cursor inside a function to ${what}.`);
      return undefined;
    }
    if (save && located.document.isDirty) {
      await located.document.save();
    }
    const client = await this.clientOrExplain();
    if (client === undefined) {
      return undefined;
    }
    const target = await this.target(client, located);
    return target === undefined ? undefined : { client, located, target };
  }

  /** The call for one run: the directive (server-side), the remembered call, or ask; `how`
   * says which (for the log). */
  async chooseCall(located: Located, target: TargetInfo): Promise<ChosenCall | undefined> {
    const key = callStateKey(located.document.uri.toString(), target.qualname);
    const decision = decideCall(target, this.context.workspaceState.get<string>(key));
    if (decision.kind === "remembered") {
      return { call: decision.call, how: decision.kind };
    }
    if (decision.kind === "ask") {
      const call = await this.askCall(target, decision.template);
      if (call === undefined) {
        traceInfo(`${target.qualname}: no call expression given`);
        return undefined;
      }
      await this.context.workspaceState.update(key, call);
      return { call, how: decision.kind };
    }
    return { call: undefined, how: decision.reason };
  }

  /** **Profile on N processes**: ask for N, then profile under torchrun on this host. */
  async profileOnProcesses(arg: unknown): Promise<void> {
    const value = await vscode.window.showInputBox({
      title: "torchscope: profile on N processes (torchrun on this host)",
      prompt: "Number of ranks; the call expression runs after the process group is initialised",
      value: "2",
      ignoreFocusOut: true,
      validateInput: (text) => (/^[1-9][0-9]*$/.test(text.trim()) ? undefined : "a whole number of processes, e.g. 2"),
    });
    if (value !== undefined) {
      await this.profileFunction(arg, Number(value.trim()));
    }
  }

  async profileFunction(arg: unknown, nproc?: number): Promise<void> {
    const started = await this.start(arg, "profile it");
    // The "Profile with captured inputs" lens passes {replay: true}: no call, so the server
    // replays the capture (a remembered call would win over it).
    const replay = typeof arg === "object" && arg !== null && (arg as { replay?: unknown }).replay === true;
    const chosen =
      started === undefined
        ? undefined
        : replay
          ? { call: undefined, how: "capture" }
          : await this.chooseCall(started.located, started.target);
    if (started === undefined || chosen === undefined) {
      return;
    }
    const { client, located, target } = started;
    const call = chosen.call;
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    // The "Profile memory" lens passes {memory: true}; the setting turns it on for every profile.
    const memory = typeof arg === "object" && arg !== null && (arg as { memory?: unknown }).memory === true;
    const profileArgs = buildProfileArgs(located.document.uri.toString(), target.line, call, settings, memory);
    const args = nproc === undefined ? profileArgs : { ...profileArgs, nproc };
    const command = nproc === undefined ? ServerCommands.profile : ServerCommands.profileRanks;
    traceInfo(`profile ${target.qualname} (${chosen.how}): ${JSON.stringify(args)}`);

    this.status.set({ kind: "profiling", target: target.qualname });
    let result: CommandResult | "cancelled";
    try {
      result = await this.runWithProgress(client, `torchscope: profiling ${target.qualname}`, command, args);
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
      this.traces.remember(located.document.uri.toString(), tracePath);
      traceInfo(`profile ${target.qualname}: ${headline ?? "done"}${tracePath !== undefined ? ` (trace ${tracePath})` : ""}`);
      this.status.set({ kind: "idle", detail: `${target.qualname}: ${headline ?? "done"}` });
    } else {
      // The server publishes an Error diagnostic on the def line and shows the message.
      traceError(`profile ${target.qualname}: ${result.error}`);
      this.status.set({ kind: "error", message: `${target.qualname}: ${result.error}` });
    }
  }

  runWithProgress(client: LanguageClient, title: string, command: string, argument: object): Thenable<CommandResult | "cancelled"> {
    return runWithProgress(client, title, command, argument);
  }

  async editCallExpression(arg: unknown): Promise<void> {
    const started = await this.start(arg, "edit its call expression", false);
    if (started === undefined) {
      return;
    }
    const { located, target } = started;
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

  async clearResults(arg: unknown): Promise<void> {
    const { uri } = parseLocationArg(arg instanceof vscode.Uri ? arg.toString() : arg);
    this.traces.forget(uri);
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
