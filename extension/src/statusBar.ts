/** The status-bar item: idle / starting / profiling / error; a click opens the log. */
import * as vscode from "vscode";
import { ClientCommands } from "./constants";

export type StatusState =
  | { kind: "starting" }
  | { kind: "idle"; detail?: string }
  | { kind: "profiling"; target: string }
  | { kind: "stopped"; reason: string }
  | { kind: "error"; message: string };

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private current: StatusState = { kind: "starting" };

  constructor() {
    this.item = vscode.window.createStatusBarItem("torchscope.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "torchscope";
    this.item.command = ClientCommands.showLog;
    this.set({ kind: "starting" });
    this.item.show();
  }

  get state(): StatusState {
    return this.current;
  }

  set(state: StatusState): void {
    this.current = state;
    this.item.backgroundColor = undefined;
    switch (state.kind) {
      case "starting":
        this.item.text = "$(loading~spin) torchscope";
        this.item.tooltip = "torchscope: starting the server — click to show the log";
        break;
      case "idle":
        this.item.text = "$(pulse) torchscope";
        this.item.tooltip = `torchscope: ready${state.detail !== undefined ? ` — ${state.detail}` : ""} — click to show the log`;
        break;
      case "profiling":
        this.item.text = `$(sync~spin) torchscope: profiling ${state.target}`;
        this.item.tooltip = `torchscope: profiling ${state.target} — click to show the log`;
        break;
      case "stopped":
        this.item.text = "$(circle-slash) torchscope";
        this.item.tooltip = `torchscope: not running — ${state.reason} — click to show the log`;
        break;
      case "error":
        this.item.text = "$(error) torchscope";
        this.item.tooltip = `torchscope: ${state.message} — click to show the log`;
        this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
        break;
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}
