/**
 * The Getting Started walkthrough's **Open the example** (package.json `walkthroughs`: pick an
 * interpreter, profile the example, open the trace): the guide's example, shipped in the
 * extension as `examples/matmul_add.py`, copied into the workspace folder once and opened with
 * the cursor inside `fn`, ready for **Profile this function**.
 */
import * as vscode from "vscode";
import type { CommandRow } from "./commandRow";
import { ClientCommands } from "./constants";
import { traceInfo } from "./log";

/** The example inside the extension, and the name its copy gets in the workspace. */
export const EXAMPLE_SOURCE = "examples/matmul_add.py";
export const EXAMPLE_COPY = "torchscope_example.py";

/** 0-based line of `def fn` in the example's text (the cursor goes there; 0 if absent). */
export function exampleDefLine(text: string): number {
  return Math.max(0, text.split("\n").findIndex((line) => line.startsWith("def fn(")));
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

export function walkthroughRows(context: vscode.ExtensionContext): CommandRow[] {
  return [{ id: ClientCommands.openExample, run: () => openExample(context) }];
}

async function openExample(context: vscode.ExtensionContext): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (folder === undefined) {
    void vscode.window.showWarningMessage("torchscope: open a folder first — the example is copied into it, and torchscope profiles files on disk.");
    return;
  }
  const copy = vscode.Uri.joinPath(folder.uri, EXAMPLE_COPY);
  if (!(await exists(copy))) {
    const source = vscode.Uri.joinPath(context.extensionUri, EXAMPLE_SOURCE);
    await vscode.workspace.fs.writeFile(copy, await vscode.workspace.fs.readFile(source));
    traceInfo(`copied the example to ${copy.fsPath}`);
  }
  const document = await vscode.workspace.openTextDocument(copy);
  const editor = await vscode.window.showTextDocument(document);
  const line = exampleDefLine(document.getText()) + 1; // inside fn's body
  const position = new vscode.Position(Math.min(line, document.lineCount - 1), 4);
  editor.selection = new vscode.Selection(position, position);
  editor.revealRange(new vscode.Range(position, position));
}
