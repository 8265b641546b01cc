/**
 * `torchscope.*` settings (pure logic, no `vscode` import: callers pass the result of
 * `vscode.workspace.getConfiguration(SETTINGS_SECTION, scope)`, which satisfies
 * `ConfigurationLike`).
 */
import type { ProfileArgs } from "./types";

export interface Settings {
  steps: number;
  warmup: number;
  timeoutSeconds: number;
  hotLineThreshold: number;
  inlayHintsEnabled: boolean;
  /** Raw `torchscope.pythonPath` (not expanded; see interpreter.ts). Empty when unset. */
  pythonPath: string;
  perfettoOrigin: string;
  /** Traces kept in the private trace folder (newest first). */
  keepTraces: number;
  /** `torchscope.maxMemory`, e.g. "12G"; empty: the server's default (half the RAM). */
  maxMemory: string;
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze({
  steps: 5,
  warmup: 3,
  timeoutSeconds: 120,
  hotLineThreshold: 5,
  inlayHintsEnabled: true,
  pythonPath: "",
  perfettoOrigin: "https://ui.perfetto.dev",
  keepTraces: 20,
  maxMemory: "",
});

/** The part of `vscode.WorkspaceConfiguration` we read. Keys are relative to `torchscope.`. */
export interface ConfigurationLike {
  get(section: string): unknown;
}

/** The part of `vscode.ConfigurationChangeEvent` we read. */
export interface ConfigurationChangeLike {
  affectsConfiguration(section: string): boolean;
}

function num(value: unknown, fallback: number, min: number, max: number, integer: boolean): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return fallback;
  }
  const v = integer ? Math.round(value) : value;
  return Math.min(max, Math.max(min, v));
}

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
}

function str(value: unknown, fallback: string): string {
  return typeof value === "string" ? value.trim() : fallback;
}

/** Read and sanitise the settings: wrong types fall back to defaults, numbers are clamped. */
export function resolveSettings(config: ConfigurationLike): Settings {
  const d = DEFAULT_SETTINGS;
  const origin = str(config.get("perfetto.origin"), d.perfettoOrigin).replace(/\/+$/, "");
  return {
    steps: num(config.get("steps"), d.steps, 1, 1000, true),
    warmup: num(config.get("warmup"), d.warmup, 0, 1000, true),
    timeoutSeconds: num(config.get("timeout"), d.timeoutSeconds, 1, 24 * 3600, false),
    hotLineThreshold: num(config.get("hotLineThreshold"), d.hotLineThreshold, 0, 100, false),
    inlayHintsEnabled: bool(config.get("inlayHints.enabled"), d.inlayHintsEnabled),
    pythonPath: str(config.get("pythonPath"), d.pythonPath),
    perfettoOrigin: origin === "" ? d.perfettoOrigin : origin,
    keepTraces: num(config.get("keepTraces"), d.keepTraces, 1, 10000, true),
    maxMemory: str(config.get("maxMemory"), d.maxMemory),
  };
}

/**
 * Settings as the server reads them: `initializationOptions: {settings}` and
 * `workspace/didChangeConfiguration` `{settings}` (snake_case, like the command arguments).
 * `traceDir`: the private trace folder (under the workspace storage; see server.ts).
 */
export function serverSettings(s: Settings, traceDir?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {
    steps: s.steps,
    warmup: s.warmup,
    timeout_s: s.timeoutSeconds,
    hot_line_threshold: s.hotLineThreshold,
    inlay_hints: s.inlayHintsEnabled,
    perfetto_origin: s.perfettoOrigin,
    keep_traces: s.keepTraces,
  };
  if (s.maxMemory !== "") {
    out.max_memory = s.maxMemory;
  }
  if (traceDir !== undefined) {
    out.trace_dir = traceDir;
  }
  return out;
}

/** The argument object of `torchscope.profile`. */
export function buildProfileArgs(uri: string, line: number, call: string | undefined, s: Settings): ProfileArgs {
  const args: ProfileArgs = { uri, line, steps: s.steps, warmup: s.warmup, timeout_s: s.timeoutSeconds };
  if (call !== undefined) {
    args.call = call;
  }
  return args;
}

/** A change that needs a new server process (a different interpreter). */
export function needsRestart(e: ConfigurationChangeLike): boolean {
  return e.affectsConfiguration("torchscope.pythonPath");
}

/** A change the running server should hear about (`workspace/didChangeConfiguration`). */
export function needsNotify(e: ConfigurationChangeLike): boolean {
  return e.affectsConfiguration("torchscope") && !needsRestart(e);
}
