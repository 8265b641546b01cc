/**
 * The language server's lifecycle: resolve the interpreter, check torch, start
 * `<python> extension/launcher/launch.py serve` over stdio, restart (debounced) when the
 * interpreter changes. States and their transitions are logged.
 */
import * as os from "node:os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  type Executable,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  State,
} from "vscode-languageclient/node";
import { CLIENT_ID, CLIENT_NAME, HOVER_COMMANDS, Notifications, RESTART_DEBOUNCE_MS, SETTINGS_SECTION } from "./constants";
import { describeInterpreter, type Interpreter } from "./interpreter";
import { errorText, logChannel, serverLogLevel, traceError, traceInfo, traceWarn } from "./log";
import { hasPythonExtension, probeTorch, resolveInterpreter } from "./python";
import { resolveSettings, serverSettings, workerEnvFile } from "./settings";
import type { StatusBar } from "./statusBar";

export interface ProfileDone {
  uri: string;
  report: Record<string, unknown>;
}

export type ServerState = "stopped" | "starting" | "running" | "unavailable" | "failed";

/** Relative to the extension root (the repository root in development). */
export const LAUNCHER = "extension/launcher/launch.py";

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private stateValue: ServerState = "stopped";
  private interpreterValue: Interpreter | undefined;
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly disposables: { dispose(): unknown }[] = [];
  private readonly profileDoneEmitter = new vscode.EventEmitter<ProfileDone>();
  /** Fires on the server's `torchscope/profileDone` notification. */
  readonly onProfileDone = this.profileDoneEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly status: StatusBar,
  ) {}

  get state(): ServerState {
    return this.stateValue;
  }

  get interpreter(): Interpreter | undefined {
    return this.interpreterValue;
  }

  private setState(next: ServerState, detail?: string): void {
    if (next !== this.stateValue) {
      traceInfo(`server: ${this.stateValue} -> ${next}${detail !== undefined ? ` (${detail})` : ""}`);
    }
    this.stateValue = next;
  }

  /** Run start/stop operations one after another. */
  private enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(reason: string): Promise<void> {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
    }
    traceInfo(`server: restart (${reason})`);
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  /** Debounced restart: several changes in a row restart once. */
  scheduleRestart(reason: string): void {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.restart(reason);
    }, RESTART_DEBOUNCE_MS);
  }

  /** The running client after pending starts/restarts, or undefined (the reason was shown). */
  async ready(): Promise<LanguageClient | undefined> {
    await this.queue;
    if (this.stateValue !== "running" && this.stateValue !== "failed") {
      // Not started yet, or stopped after a fix (e.g. torch installed since): try again.
      await this.start();
    }
    return this.stateValue === "running" ? this.client : undefined;
  }

  /** Send the current settings to the running server. */
  async notifySettings(): Promise<void> {
    const client = this.client;
    if (client?.isRunning() !== true) {
      return;
    }
    const settings = this.serverSettings(this.workspaceFolder());
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings });
  }

  /** The settings the server reads (server-side names), the worker's env file resolved. */
  private serverSettings(folder: vscode.WorkspaceFolder | undefined): Record<string, unknown> {
    const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, folder?.uri));
    const pythonEnvFile = vscode.workspace.getConfiguration("python", folder?.uri).get("envFile");
    const envFile = workerEnvFile(settings.envFile, pythonEnvFile, folder?.uri.fsPath, os.homedir());
    return serverSettings(settings, this.traceDir(), envFile);
  }

  /**
   * The private trace folder: `traces/` under this workspace's storage (the global storage when
   * no folder is open), on the machine where the extension and the server run (the remote one
   * over Remote-SSH). The server creates it with mode 0700 and keeps traces for
   * `torchscope.keepTracesDays` days, up to `torchscope.keepTracesGB` GB together.
   */
  traceDir(): string | undefined {
    const storage = this.context.storageUri ?? this.context.globalStorageUri;
    return storage.scheme === "file" ? vscode.Uri.joinPath(storage, "traces").fsPath : undefined;
  }

  private workspaceFolder(): vscode.WorkspaceFolder | undefined {
    const active = vscode.window.activeTextEditor?.document.uri;
    return (active !== undefined ? vscode.workspace.getWorkspaceFolder(active) : undefined) ?? vscode.workspace.workspaceFolders?.[0];
  }

  private async doStart(): Promise<void> {
    if (this.client !== undefined) {
      return;
    }
    this.setState("starting");
    this.status.set({ kind: "starting" });
    const folder = this.workspaceFolder();
    const interpreter = await resolveInterpreter(folder?.uri);
    this.interpreterValue = interpreter;
    traceInfo(`interpreter: ${describeInterpreter(interpreter)}`);

    const torch = await probeTorch(interpreter.path, folder?.uri.fsPath);
    if (!torch.ok) {
      this.setState("unavailable", torch.problem);
      traceError(torch.detail !== undefined ? `${torch.message} (${torch.detail})` : torch.message);
      this.status.set({ kind: "error", message: torch.message });
      void this.explainUnavailable(torch.message);
      return;
    }
    traceInfo(`python ${torch.python}, torch ${torch.torch}`);

    const launcher = this.context.asAbsolutePath(LAUNCHER);
    const run: Executable = {
      command: interpreter.path,
      // stdio without `transport`: TransportKind.stdio would append `--stdio` to the arguments.
      args: [launcher, "serve", "--log-level", serverLogLevel()],
      options: {
        cwd: folder?.uri.fsPath,
        env: { ...process.env, PYTHONUNBUFFERED: "1", PYTHONDONTWRITEBYTECODE: "1" },
      },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file", language: "python" }],
      outputChannel: logChannel(),
      traceOutputChannel: logChannel(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // Hovers link to these client commands (open a trace, open Inductor's generated code).
      markdown: { isTrusted: { enabledCommands: [...HOVER_COMMANDS] } },
      initializationOptions: {
        settings: this.serverSettings(folder),
        interpreter: interpreter.path,
        extensionVersion: (this.context.extension.packageJSON as { version?: string }).version,
      },
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, { run, debug: run }, clientOptions);
    this.disposables.push(
      client.onDidChangeState((e) => {
        if (client !== this.client) {
          return;
        }
        if (e.newState === State.Running) {
          this.setState("running");
          this.status.set({ kind: "idle", detail: `torch ${torch.torch}, ${interpreter.path}` });
        } else if (e.newState === State.Stopped && this.stateValue === "running") {
          this.setState("failed", "server process stopped");
          this.status.set({ kind: "error", message: "the server stopped; run 'torchscope: Restart server'" });
        }
      }),
    );
    this.disposables.push(
      client.onNotification(Notifications.profileDone, (params: ProfileDone) => {
        this.profileDoneEmitter.fire(params);
      }),
    );
    this.client = client;
    traceInfo(`starting server: ${interpreter.path} ${run.args?.join(" ") ?? ""}`);
    try {
      await client.start();
      this.setState("running");
      this.status.set({ kind: "idle", detail: `torch ${torch.torch}, ${interpreter.path}` });
    } catch (e) {
      this.setState("failed", errorText(e));
      traceError("server failed to start", e);
      this.status.set({ kind: "error", message: `the server failed to start: ${errorText(e)}` });
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.stop(5000);
      } catch (e) {
        traceWarn(`server stop: ${errorText(e)}`);
      }
      try {
        await client.dispose(2000);
      } catch {
        // already gone
      }
    }
    this.setState("stopped");
    this.status.set({ kind: "stopped", reason: "stopped" });
  }

  private async explainUnavailable(message: string): Promise<void> {
    const actions: string[] = [];
    if (await hasPythonExtension()) {
      actions.push("Select Interpreter");
    }
    actions.push("Open Settings", "Show Log");
    const choice = await vscode.window.showErrorMessage(`torchscope: ${message}`, ...actions);
    if (choice === "Select Interpreter") {
      await vscode.commands.executeCommand("python.setInterpreter");
    } else if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "torchscope.pythonPath");
    } else if (choice === "Show Log") {
      logChannel().show(true);
    }
  }

  dispose(): void {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
    this.profileDoneEmitter.dispose();
    void this.stop();
  }
}
