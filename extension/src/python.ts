/**
 * The Python side of the client: the interpreter the Python extension selected (through
 * `@vscode/python-extension`, optional — the fallback order lives in interpreter.ts) and a torch
 * probe in that interpreter.
 */
import { execFile } from "node:child_process";
import * as os from "node:os";
import * as vscode from "vscode";
import { PythonExtension } from "@vscode/python-extension";
import { SETTINGS_SECTION } from "./constants";
import { chooseInterpreter, interpretTorchProbe, TORCH_PROBE_SCRIPT, type Interpreter, type TorchCheck } from "./interpreter";
import { resolveSettings } from "./settings";
import { errorText, traceDebug, traceInfo } from "./log";

let api: PythonExtension | undefined;
let apiTried = false;

/** The Python extension's API, or undefined when it is not installed (e.g. offline code-server). */
async function pythonApi(): Promise<PythonExtension | undefined> {
  if (!apiTried) {
    apiTried = true;
    if (vscode.extensions.getExtension("ms-python.python") === undefined) {
      traceInfo("Python extension not installed: using torchscope.pythonPath or python3");
      return undefined;
    }
    try {
      api = await PythonExtension.api();
    } catch (e) {
      traceInfo(`Python extension unavailable (${errorText(e)}): using torchscope.pythonPath or python3`);
    }
  }
  return api;
}

/** The executable the Python extension selected for `resource`, if any. */
async function fromPythonExtension(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const ext = await pythonApi();
  if (ext === undefined) {
    return undefined;
  }
  try {
    const envPath = ext.environments.getActiveEnvironmentPath(resource);
    const env = await ext.environments.resolveEnvironment(envPath);
    return env?.executable.uri?.fsPath;
  } catch (e) {
    traceInfo(`Python extension gave no interpreter: ${errorText(e)}`);
    return undefined;
  }
}

/** Resolve the interpreter for `resource` (a file or workspace folder). */
export async function resolveInterpreter(resource: vscode.Uri | undefined): Promise<Interpreter> {
  const folder = resource !== undefined ? vscode.workspace.getWorkspaceFolder(resource) : vscode.workspace.workspaceFolders?.[0];
  const settings = resolveSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, resource));
  return chooseInterpreter({
    fromPythonExtension: await fromPythonExtension(resource),
    settingPath: settings.pythonPath,
    workspaceFolder: folder?.uri.fsPath,
    home: os.homedir(),
  });
}

/** Fires when the Python extension's selected interpreter changes (never without it). */
export async function onDidChangeInterpreter(listener: () => void): Promise<vscode.Disposable> {
  const ext = await pythonApi();
  if (ext === undefined) {
    return new vscode.Disposable(() => undefined);
  }
  return ext.environments.onDidChangeActiveEnvironmentPath(() => {
    listener();
  });
}

/** Whether the Python extension is there (to offer its "Select Interpreter" command). */
export async function hasPythonExtension(): Promise<boolean> {
  return (await pythonApi()) !== undefined;
}

/** Run `import torch` in `python` and check its version. */
export function probeTorch(python: string, cwd: string | undefined, timeoutMs = 120_000): Promise<TorchCheck> {
  return new Promise((resolve) => {
    execFile(
      python,
      ["-c", TORCH_PROBE_SCRIPT],
      { cwd, timeout: timeoutMs, env: { ...process.env, PYTHONNOUSERSITE: process.env.PYTHONNOUSERSITE ?? "" } },
      (error, stdout, stderr) => {
        if (stderr.trim() !== "") {
          traceDebug(`torch probe stderr: ${stderr.trim()}`);
        }
        const spawnError = error !== null && stdout.trim() === "" ? error.message : undefined;
        resolve(interpretTorchProbe(python, stdout, spawnError));
      },
    );
  });
}
