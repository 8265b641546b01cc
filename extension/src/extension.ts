/** torchscope's VS Code client: wiring only; each concern lives in its own module. */
import * as vscode from "vscode";
import { Commands } from "./commands";
import { SETTINGS_SECTION } from "./constants";
import { createLogChannel, traceInfo } from "./log";
import { refusal } from "./platform";
import { onDidChangeInterpreter } from "./python";
import { ServerManager } from "./server";
import { needsNotify, needsRestart, resolveSettings } from "./settings";
import { StatusBar } from "./statusBar";

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = createLogChannel();
  context.subscriptions.push(log);
  const version = (context.extension.packageJSON as { version?: string }).version ?? "?";
  traceInfo(`torchscope ${version} activating (VS Code ${vscode.version}, ${vscode.env.remoteName ?? "local"})`);
  const refused = refusal(process.platform);
  if (refused !== undefined) {
    traceInfo(refused);
    void vscode.window.showErrorMessage(refused);
    return;
  }

  const status = new StatusBar();
  server = new ServerManager(context, status);
  const commands = new Commands(context, server, status);
  context.subscriptions.push(status, server, ...commands.register());

  const srv = server;
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (needsRestart(e)) {
        srv.scheduleRestart("torchscope.pythonPath changed");
      } else if (needsNotify(e)) {
        void srv.notifySettings();
      }
    }),
    await onDidChangeInterpreter(() => {
      // An explicit torchscope.pythonPath wins over the Python extension's choice (interpreter.ts).
      if (resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION)).pythonPath === "") {
        srv.scheduleRestart("Python interpreter changed");
      }
    }),
  );

  void server.start();
  traceInfo("torchscope activated");
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
