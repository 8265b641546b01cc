/**
 * One `LogOutputChannel` for the client and the server: the language client writes the
 * server's stderr and `window/logMessage` into the same channel.
 */
import * as vscode from "vscode";
import { LOG_CHANNEL_NAME } from "./constants";

let channel: vscode.LogOutputChannel | undefined;

export function createLogChannel(): vscode.LogOutputChannel {
  channel ??= vscode.window.createOutputChannel(LOG_CHANNEL_NAME, { log: true });
  return channel;
}

export function logChannel(): vscode.LogOutputChannel {
  return createLogChannel();
}

export function traceInfo(message: string): void {
  channel?.info(message);
}

export function traceWarn(message: string): void {
  channel?.warn(message);
}

export function traceError(message: string, error?: unknown): void {
  if (error === undefined) {
    channel?.error(message);
  } else {
    channel?.error(`${message}: ${errorText(error)}`);
  }
}

export function traceDebug(message: string): void {
  channel?.debug(message);
}

export function showLog(): void {
  channel?.show(true);
}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return typeof error === "string" ? error : JSON.stringify(error);
}

/** The channel's level (the user sets it with "Developer: Set Log Level…") as a Python logging level. */
export function serverLogLevel(): string {
  switch (channel?.logLevel) {
    case vscode.LogLevel.Trace:
    case vscode.LogLevel.Debug:
      return "DEBUG";
    case vscode.LogLevel.Warning:
      return "WARNING";
    case vscode.LogLevel.Error:
      return "ERROR";
    case vscode.LogLevel.Off:
      return "CRITICAL";
    default:
      return "INFO";
  }
}
