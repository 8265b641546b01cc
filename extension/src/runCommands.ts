/**
 * **Profile this function in a run…** (docs/real-inputs.md): pick the program — a launch.json
 * Python configuration, the one used last for this function, or a typed command line — and run
 * the server's `torchscope.profileInRun` on the function with progress ("waiting for the first
 * call", "calls seen: N of M", the passes), capturing the call's arguments. The server
 * publishes the verdict like a profile's and shows a failure itself.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import type { CommandRow } from "./commandRow";
import type { CommandHost, Started } from "./compareCommands";
import { ClientCommands, ServerCommands, SETTINGS_SECTION } from "./constants";
import { errorText, traceError, traceInfo } from "./log";
import { reportHeadline } from "./report";
import { commandLine, type LaunchConfig, type RunChoice, runChoices, runEntryKey, splitCommandLine } from "./runEntry";
import { buildProfileArgs, resolveSettings } from "./settings";
import type { StatusBar } from "./statusBar";

const TYPE_IT = "Enter a command line…";

export class RunCommands {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly host: CommandHost,
    private readonly status: StatusBar,
  ) {}

  rows(): CommandRow[] {
    return [{ id: ClientCommands.profileInRun, run: (arg) => this.profileInRun(arg) }];
  }

  /** The program for this function: `{entry}` in the argument, else a pick; remembered. */
  private async chooseEntry(arg: unknown, started: Started): Promise<string[] | undefined> {
    const given = typeof arg === "object" && arg !== null ? (arg as { entry?: unknown }).entry : undefined;
    const key = runEntryKey(started.located.document.uri.toString(), started.target.qualname);
    let entry: string[] | undefined;
    if (Array.isArray(given) && given.every((w) => typeof w === "string")) {
      entry = given;
    } else {
      entry = await this.pick(started, this.context.workspaceState.get<string[]>(key));
    }
    if (entry !== undefined) {
      await this.context.workspaceState.update(key, entry);
    }
    return entry;
  }

  private async pick(started: Started, remembered: string[] | undefined): Promise<string[] | undefined> {
    const document = started.located.document;
    const folder = vscode.workspace.getWorkspaceFolder(document.uri);
    const configs = vscode.workspace.getConfiguration("launch", folder?.uri).get<LaunchConfig[]>("configurations") ?? [];
    const choices = runChoices(configs, folder?.uri.fsPath ?? path.dirname(document.uri.fsPath), document.uri.fsPath, remembered);
    const items: (vscode.QuickPickItem & { choice?: RunChoice })[] = [
      ...choices.map((choice, i) => ({
        label: choice.label,
        description: commandLine(choice.entry),
        detail: i === 0 && remembered !== undefined ? "used last for this function" : undefined,
        choice,
      })),
      { label: TYPE_IT },
    ];
    const picked = await vscode.window.showQuickPick(items, {
      title: `torchscope: profile ${started.target.qualname} in which program?`,
      placeHolder: "The program runs in a torchscope worker from the workspace folder, until it has called the function enough",
    });
    if (picked === undefined || picked.choice !== undefined) {
      return picked?.choice?.entry;
    }
    const relative = vscode.workspace.asRelativePath(document.uri, false);
    const typed = await vscode.window.showInputBox({
      title: `torchscope: the program that calls ${started.target.qualname}`,
      prompt: "python script.py ARGS…, -m module ARGS… or pytest tests/test_x.py::test_y (run from the workspace folder)",
      value: remembered !== undefined ? commandLine(remembered) : `python ${relative}`,
      ignoreFocusOut: true,
      validateInput: (text) => (splitCommandLine(text).length === 0 ? "Enter the program's command line, e.g. python train.py --steps 5" : undefined),
    });
    return typed === undefined ? undefined : splitCommandLine(typed);
  }

  async profileInRun(arg: unknown): Promise<void> {
    const started = await this.host.start(arg, "profile it in a run");
    const entry = started === undefined ? undefined : await this.chooseEntry(arg, started);
    if (started === undefined || entry === undefined) {
      return;
    }
    const { client, located, target } = started;
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    // capture: the call's arguments go to .torchscope/inputs/, for the "Profile with captured
    // inputs" lens (a later Profile replays them).
    const args = { ...buildProfileArgs(located.document.uri.toString(), target.line, undefined, settings), entry, capture: true };
    traceInfo(`profile ${target.qualname} in \`${commandLine(entry)}\`: ${JSON.stringify(args)}`);
    this.status.set({ kind: "profiling", target: target.qualname });
    try {
      const title = `torchscope: profiling ${target.qualname} in \`${commandLine(entry)}\``;
      const result = await this.host.runWithProgress(client, title, ServerCommands.profileInRun, args);
      if (result === "cancelled") {
        this.status.set({ kind: "idle", detail: "cancelled" });
      } else if (result.ok) {
        const headline = reportHeadline(result.report) ?? "done";
        traceInfo(`profile ${target.qualname} in a run: ${headline}`);
        this.status.set({ kind: "idle", detail: `${target.qualname}: ${headline}` });
      } else {
        traceError(`profile ${target.qualname} in a run: ${result.error}`); // the server showed it
        this.status.set({ kind: "error", message: `${target.qualname}: ${result.error}` });
      }
    } catch (e) {
      this.status.set({ kind: "error", message: `${target.qualname}: ${errorText(e)}` });
      throw e;
    }
  }
}
