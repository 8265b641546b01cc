/**
 * **Profile this function in a run…** (docs/real-inputs.md): pick the program — the one used
 * last for this function, a launch.json Python configuration, a test the Python extension's
 * test explorer would list, or a typed command line — and run the server's
 * `torchscope.profileInRun` on the function with progress ("waiting for the first call",
 * "calls seen: N of M", the passes), capturing the call's arguments. The server publishes the
 * verdict like a profile's and shows a failure itself.
 *
 * The tests: VS Code gives no access to another extension's test items, so the server collects
 * them with pytest and the Python extension's settings (`torchscope.collectTests`); the pick
 * opens at once and the tests join it when collected (a failure is the server's one message).
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import type { CommandRow } from "./commandRow";
import type { CommandHost, Started } from "./compareCommands";
import { ClientCommands, ServerCommands, SETTINGS_SECTION } from "./constants";
import { errorText, traceError, traceInfo } from "./log";
import { reportHeadline } from "./report";
import {
  type CollectedTests,
  commandLine,
  type LaunchConfig,
  programOf,
  pytestSettings,
  type PytestSettings,
  rememberedProgram,
  type RunChoice,
  type RunProgram,
  runArgs,
  runChoices,
  runEntryKey,
  runModeItems,
  runModeOf,
  splitCommandLine,
  testChoices,
} from "./runEntry";
import { buildProfileArgs, resolveSettings } from "./settings";
import type { StatusBar } from "./statusBar";

const TYPE_IT = "Enter a command line…";

type Item = vscode.QuickPickItem & { choice?: RunChoice };

/** The pick's rows: the choices (the first marked when it was used last), then the free command line. */
function pickItems(choices: RunChoice[], remembered: RunProgram | undefined): Item[] {
  return [
    ...choices.map((choice, i) => ({
      label: choice.label,
      description: choice.entry[0] === "pytest" ? undefined : commandLine(choice.entry) + (choice.cwd !== undefined ? ` (in ${vscode.workspace.asRelativePath(choice.cwd, false)})` : ""),
      detail: i === 0 && remembered !== undefined ? "used last for this function" : choice.detail,
      choice,
    })),
    { label: TYPE_IT },
  ];
}

/** The quick pick's answer: the item accepted, or undefined when it was dismissed. */
function picked(quickPick: vscode.QuickPick<Item>): Promise<Item | undefined> {
  return new Promise((resolve) => {
    quickPick.onDidAccept(() => {
      resolve(quickPick.selectedItems[0]);
      quickPick.hide();
    });
    quickPick.onDidHide(() => {
      resolve(undefined);
    });
  });
}

export class RunCommands {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly host: CommandHost,
    private readonly status: StatusBar,
  ) {}

  rows(): CommandRow[] {
    return [{ id: ClientCommands.profileInRun, run: (arg) => this.profileInRun(arg) }];
  }

  /** The program for this function: `{entry, cwd?}` in the argument, else a pick; remembered. */
  private async chooseProgram(arg: unknown, started: Started): Promise<RunProgram | undefined> {
    const given = typeof arg === "object" && arg !== null && "entry" in arg ? rememberedProgram(arg) : undefined;
    const key = runEntryKey(started.located.document.uri.toString(), started.target.qualname);
    const program = given ?? (await this.pick(started, rememberedProgram(this.context.workspaceState.get<unknown>(key))));
    if (program !== undefined) {
      await this.context.workspaceState.update(key, program);
    }
    return program;
  }

  /** Which calls to profile: `mode` in the argument, else a pick (the last choice first); remembered. */
  private async chooseMode(arg: unknown, started: Started): Promise<string | undefined> {
    const given = typeof arg === "object" && arg !== null && "mode" in arg ? runModeOf(arg.mode) : undefined;
    if (given !== undefined) {
      return given;
    }
    const key = `${runEntryKey(started.located.document.uri.toString(), started.target.qualname)}#mode`;
    const item = await vscode.window.showQuickPick(runModeItems(runModeOf(this.context.workspaceState.get<unknown>(key))), {
      title: `torchscope: profile which calls of ${started.target.qualname}?`,
    });
    if (item !== undefined) {
      await this.context.workspaceState.update(key, item.mode);
    }
    return item?.mode;
  }

  /** The tests pytest collects with the Python extension's settings (logged and empty on failure). */
  private async collectTests(client: LanguageClient, uri: vscode.Uri, pytest: PytestSettings): Promise<RunChoice[]> {
    const argument = { uri: uri.toString(), args: pytest.args, ...(pytest.cwd !== undefined ? { cwd: pytest.cwd } : {}) };
    try {
      const answer = (await client.sendRequest(ExecuteCommandRequest.type, { command: ServerCommands.collectTests, arguments: [argument] })) as CollectedTests;
      if (!answer.ok) {
        traceError(`collecting the tests: ${answer.error ?? "failed"}`); // the server showed it
      }
      return testChoices(answer);
    } catch (e) {
      traceError(`collecting the tests: ${errorText(e)}`);
      return [];
    }
  }

  private async pick(started: Started, remembered: RunProgram | undefined): Promise<RunProgram | undefined> {
    const document = started.located.document;
    const folder = vscode.workspace.getWorkspaceFolder(document.uri);
    const root = folder?.uri.fsPath ?? path.dirname(document.uri.fsPath);
    const configs = vscode.workspace.getConfiguration("launch", folder?.uri).get<LaunchConfig[]>("configurations") ?? [];
    const testing = vscode.workspace.getConfiguration("python.testing", folder?.uri);
    const pytest = pytestSettings((k) => testing.get(k), root, document.uri.fsPath);
    const quickPick = vscode.window.createQuickPick<Item>();
    quickPick.title = `torchscope: profile ${started.target.qualname} in which program?`;
    quickPick.placeholder = "It runs in a torchscope worker until it has called the function enough times";
    quickPick.matchOnDescription = true;
    quickPick.items = pickItems(runChoices(configs, root, document.uri.fsPath, remembered), remembered);
    if (pytest !== undefined) {
      quickPick.busy = true;
      void this.collectTests(started.client, document.uri, pytest).then((tests) => {
        const active = quickPick.activeItems.map((i) => i.label);
        quickPick.items = pickItems(runChoices(configs, root, document.uri.fsPath, remembered, tests), remembered);
        quickPick.activeItems = quickPick.items.filter((i) => active.includes(i.label));
        quickPick.busy = false;
        traceInfo(`the run pick lists ${tests.length} tests`);
      });
    }
    quickPick.show();
    const item = await picked(quickPick);
    quickPick.dispose();
    if (item === undefined || item.choice !== undefined) {
      return item?.choice === undefined ? undefined : programOf(item.choice);
    }
    const relative = vscode.workspace.asRelativePath(document.uri, false);
    const typed = await vscode.window.showInputBox({
      title: `torchscope: the program that calls ${started.target.qualname}`,
      prompt: "python script.py ARGS…, -m module ARGS… or pytest tests/test_x.py::test_y (run from the workspace folder)",
      value: remembered !== undefined ? commandLine(remembered.entry) : `python ${relative}`,
      ignoreFocusOut: true,
      validateInput: (text) => (splitCommandLine(text).length === 0 ? "Enter the program's command line, e.g. python train.py --steps 5" : undefined),
    });
    return typed === undefined ? undefined : { entry: splitCommandLine(typed) };
  }

  async profileInRun(arg: unknown): Promise<void> {
    const started = await this.host.start(arg, "profile it in a run");
    const program = started === undefined ? undefined : await this.chooseProgram(arg, started);
    if (started === undefined || program === undefined) {
      return;
    }
    const mode = await this.chooseMode(arg, started);
    if (mode === undefined) {
      return;
    }
    const { entry } = program;
    const { client, located, target } = started;
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    // capture: the call's arguments go to .torchscope/inputs/, for the "Profile with captured
    // inputs" lens (a later Profile replays them).
    const args = {
      ...buildProfileArgs(located.document.uri.toString(), target.line, undefined, settings),
      ...runArgs(program), // entry, cwd, and a launch configuration's env and envFile
      capture: true,
      mode,
    };
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
