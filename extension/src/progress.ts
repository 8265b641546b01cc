/** Running a server command with its `$/progress` shown as a cancellable notification. */
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
import { traceInfo } from "./log";
import type { CommandResult } from "./types";

/** `workspace/executeCommand` with a work-done token shown as a cancellable notification. */
export function runWithProgress(
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
