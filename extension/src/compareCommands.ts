/**
 * **Compare with torch.compile** and **Profile across sizes…** (DESIGN.md §6). Both run a
 * server command with a cancellable progress notification, then show the result in a small
 * webview beside the editor: the server's Markdown of the comparison or of the sweep's table
 * (plus the sweep's SVG chart). The
 * server also publishes the comparison as a diagnostic on the `def` line with a hover whose
 * command link opens the code Inductor generated (`torchscope.openGeneratedCode`).
 */
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { buildCallTemplate, callStateKey } from "./callExpression";
import { COMPILE_MODES, type CompileMode, compareSummary, isCompileMode, parseCompare } from "./compare";
import type { CommandRow } from "./commandRow";
import { ClientCommands, ServerCommands, SETTINGS_SECTION, SWEEP_STATE_PREFIX } from "./constants";
import { errorText, traceError, traceInfo } from "./log";
import { parseLocationArg } from "./report";
import { markdownHtml, showResultPanel } from "./resultPanel";
import { buildProfileArgs, resolveSettings } from "./settings";
import type { StatusBar } from "./statusBar";
import { chartHtml, DEFAULT_SIZES, initialSweepCall, parseSizes, parseSweep, SIZE_NAME, sweepSummary, validateSizes, validateSweepCall } from "./sweep";
import type { CommandResult, TargetInfo } from "./types";

export interface Located {
  document: vscode.TextDocument;
  line: number;
}

/** The call a run uses (undefined: the server's choice) and how it was chosen. */
export interface ChosenCall {
  call: string | undefined;
  how: string;
}

/** The function a command acts on, and the server that runs its job. */
export interface Started {
  client: LanguageClient;
  located: Located;
  target: TargetInfo;
}

/** What these commands borrow from `Commands`: finding the function, its call, running a job. */
export interface CommandHost {
  start(arg: unknown, what: string, save?: boolean): Promise<Started | undefined>;
  chooseCall(located: Located, target: TargetInfo): Promise<ChosenCall | undefined>;
  runWithProgress(client: LanguageClient, title: string, command: string, argument: object): Thenable<CommandResult | "cancelled">;
}

/** The mode asked for: `{mode}` in the argument, else a pick when run from a menu, else default. */
async function chooseMode(arg: unknown): Promise<CompileMode | undefined> {
  const given = typeof arg === "object" && arg !== null && !(arg instanceof vscode.Uri) ? (arg as { mode?: unknown }).mode : undefined;
  if (isCompileMode(given)) {
    return given;
  }
  if (parseLocationArg(arg).uri !== undefined && !(arg instanceof vscode.Uri)) {
    return "default"; // a code lens: no questions
  }
  const picked = await vscode.window.showQuickPick(
    COMPILE_MODES.map((m) => ({ label: m, description: m === "default" ? "torch.compile(fn)" : `torch.compile(fn, mode="${m}")` })),
    { title: "torchscope: compare eager with torch.compile — which mode?" },
  );
  return picked?.label;
}

export class CompareCommands {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly host: CommandHost,
    private readonly status: StatusBar,
  ) {}

  rows(): CommandRow[] {
    return [
      { id: ClientCommands.compareCompile, run: (arg) => this.compareCompile(arg) },
      { id: ClientCommands.profileCompiled, run: (arg) => this.compareCompile(arg, "default") },
      { id: ClientCommands.profileSizes, run: (arg) => this.profileSizes(arg) },
      { id: ClientCommands.compareLastCommit, run: (arg) => this.compareLastCommit(arg) },
      { id: ClientCommands.openGeneratedCode, run: (arg) => this.openGeneratedCode(arg) },
    ];
  }

  /** Run one server job with progress, keeping the status bar in step; undefined when it was
   * cancelled or failed (the server has published the error and shown the message). */
  private async runJob(
    client: LanguageClient,
    qualname: string,
    what: string,
    title: string,
    command: string,
    args: object,
  ): Promise<Extract<CommandResult, { ok: true }> | undefined> {
    this.status.set({ kind: "profiling", target: `${qualname} ${what}` });
    let result: CommandResult | "cancelled";
    try {
      result = await this.host.runWithProgress(client, `torchscope: ${qualname}, ${title}`, command, args);
    } catch (e) {
      this.status.set({ kind: "error", message: `${qualname}: ${errorText(e)}` });
      throw e;
    }
    if (result === "cancelled") {
      this.status.set({ kind: "idle", detail: "cancelled" });
      return undefined;
    }
    if (!result.ok) {
      traceError(`${command} ${qualname}: ${result.error}`);
      this.status.set({ kind: "error", message: `${qualname}: ${result.error}` });
      return undefined;
    }
    return result;
  }

  /** Compare with torch.compile (the mode asked for), or Profile compiled (`fixed`: no question);
   * the line hovers then show each line's compiled time beside eager. */
  async compareCompile(arg: unknown, fixed?: CompileMode): Promise<void> {
    const started = await this.host.start(arg, "compare it with torch.compile");
    if (started === undefined) {
      return;
    }
    const { client, located, target } = started;
    const mode = fixed ?? (await chooseMode(arg));
    const chosen = mode === undefined ? undefined : await this.host.chooseCall(located, target);
    if (mode === undefined || chosen === undefined) {
      traceInfo(`compare ${target.qualname}: nothing chosen`);
      return;
    }
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    const args = { ...buildProfileArgs(located.document.uri.toString(), target.line, chosen.call, settings), mode };
    traceInfo(`compare ${target.qualname} with torch.compile: ${JSON.stringify(args)}`);
    const result = await this.runJob(client, target.qualname, "vs torch.compile", "eager vs torch.compile", ServerCommands.compareCompile, args);
    if (result === undefined) {
      return;
    }
    const compare = parseCompare(result.report);
    if (compare === undefined) {
      this.status.set({ kind: "error", message: `${target.qualname}: the server sent no comparison` });
      return;
    }
    const summary = compareSummary(compare);
    traceInfo(`compare ${target.qualname}: ${summary.text}`);
    const undecided = summary.undecided ? "could not decide — " : "";
    this.status.set(summary.failed ? { kind: "error", message: `${target.qualname}: ${summary.text}` } : { kind: "idle", detail: `${target.qualname}: ${undecided}${summary.text}` });
    const body = await markdownHtml(result.markdown ?? "");
    showResultPanel(`compare:${located.document.uri.toString()}#${target.qualname}`, `torch.compile: ${target.qualname}`, body);
  }

  /** **Compare with last commit**: the function as saved vs the file at HEAD, interleaved in one
   * job; the server shows the verdict as a message, the lens title and `report.diff`. */
  async compareLastCommit(arg: unknown): Promise<void> {
    const started = await this.host.start(arg, "compare it with the last commit");
    if (started === undefined) {
      return;
    }
    const { client, located, target } = started;
    const chosen = await this.host.chooseCall(located, target);
    if (chosen === undefined) {
      return;
    }
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    const args = { ...buildProfileArgs(located.document.uri.toString(), target.line, chosen.call, settings), rev: "HEAD" };
    traceInfo(`compare ${target.qualname} with HEAD: ${JSON.stringify(args)}`);
    const result = await this.runJob(client, target.qualname, "vs HEAD", "before and after (HEAD)", ServerCommands.diff, args);
    if (result === undefined) {
      return;
    }
    const report = result.report as unknown as { diff?: { verdict?: { headline?: unknown } } } | undefined;
    const headline = report?.diff?.verdict?.headline;
    const text = typeof headline === "string" ? headline : "compared with HEAD";
    traceInfo(`compare ${target.qualname} with HEAD: ${text}`);
    this.status.set({ kind: "idle", detail: `${target.qualname}: ${text}` });
  }

  async profileSizes(arg: unknown): Promise<void> {
    const started = await this.host.start(arg, "profile it across sizes");
    if (started === undefined) {
      return;
    }
    const { client, located, target } = started;
    const uri = located.document.uri.toString();
    const sweepKey = `${SWEEP_STATE_PREFIX}${uri}#${target.qualname}`;
    const remembered = this.context.workspaceState.get<{ call?: string; sizes?: string }>(sweepKey) ?? {};
    const initial = initialSweepCall(
      target.directive,
      remembered.call,
      this.context.workspaceState.get<string>(callStateKey(uri, target.qualname)),
      buildCallTemplate(target),
    );
    const call = await vscode.window.showInputBox({
      title: `torchscope: profile ${target.qualname} across sizes (1/2) — the call`,
      prompt: `A call expression with {${SIZE_NAME}} where the size goes; it is profiled once per size.`,
      value: initial,
      ignoreFocusOut: true,
      validateInput: (text) => validateSweepCall(text),
    });
    if (call === undefined) {
      return;
    }
    const sizesText = await vscode.window.showInputBox({
      title: `torchscope: profile ${target.qualname} across sizes (2/2) — the sizes`,
      prompt: `Values for {${SIZE_NAME}}, separated by commas.`,
      value: remembered.sizes ?? DEFAULT_SIZES,
      ignoreFocusOut: true,
      validateInput: validateSizes,
    });
    const sizes = sizesText === undefined ? undefined : parseSizes(sizesText);
    if (sizes === undefined || typeof sizes === "string") {
      return;
    }
    await this.context.workspaceState.update(sweepKey, { call: call.trim(), sizes: sizesText });
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, located.document.uri));
    const args = { ...buildProfileArgs(uri, target.line, call.trim(), settings), sizes, name: SIZE_NAME };
    traceInfo(`profile ${target.qualname} across sizes: ${JSON.stringify(args)}`);
    const result = await this.runJob(client, target.qualname, `across ${SIZE_NAME}`, "across sizes", ServerCommands.sweep, args);
    if (result === undefined) {
      return;
    }
    const sweep = parseSweep((result as unknown as Record<string, unknown>).sweep);
    if (sweep === undefined) {
      this.status.set({ kind: "error", message: `${target.qualname}: the server sent no sweep` });
      return;
    }
    let svg: string | undefined;
    if (sweep.chart_path !== null) {
      try {
        svg = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(sweep.chart_path)));
      } catch (e) {
        traceError(`reading the sweep chart ${sweep.chart_path}`, e);
      }
    }
    this.status.set({ kind: "idle", detail: `${target.qualname}: ${sweepSummary(sweep)}` });
    const body = `${await markdownHtml(result.markdown ?? "")}\n${chartHtml(svg)}`;
    showResultPanel(`sweep:${uri}#${target.qualname}`, `Sizes: ${target.qualname}`, body);
  }

  /** `{path}` (the hover's link to the code Inductor generated) → open it in an editor. */
  async openGeneratedCode(arg: unknown): Promise<void> {
    const path = typeof arg === "string" ? arg : typeof arg === "object" && arg !== null ? (arg as { path?: unknown }).path : undefined;
    if (typeof path !== "string" || path === "") {
      void vscode.window.showWarningMessage("torchscope: no generated-code file given.");
      return;
    }
    try {
      await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: true, viewColumn: vscode.ViewColumn.Beside });
    } catch (e) {
      void vscode.window.showErrorMessage(`torchscope: cannot open ${path} (Inductor's cache may have been cleared): ${errorText(e)}`);
    }
  }
}
