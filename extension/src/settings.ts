/**
 * `torchscope.*` settings (pure logic, no `vscode` import: callers pass the result of
 * `vscode.workspace.getConfiguration(SETTINGS_SECTION, scope)`, which satisfies
 * `ConfigurationLike`).
 */
import { expandPath } from "./interpreter";
import type { ProfileArgs } from "./types";

/**
 * The settings that reach a job: `torchscope.<key>` → its wire name, a field of `JobOptions` in
 * `server/torchscope/protocol.py`. Their defaults are package.json's (a test holds them equal to
 * `JobOptions`'); a value of the wrong type is left out, so the server's default applies.
 * A new job option that the editor exposes is one row here plus its package.json setting.
 * A `size` row holds a memory size as text (`12G`); it is sent as set, "" included (the
 * server's default: half the physical memory), so clearing it takes effect.
 */
export const JOB_SETTINGS: readonly JobSetting[] = [
  { key: "steps", wire: "steps", min: 1, max: 1000, integer: true },
  { key: "warmup", wire: "warmup", min: 0, max: 1000, integer: true },
  { key: "timeout", wire: "timeout_s", min: 1, max: 24 * 3600, integer: false },
  { key: "memory", wire: "memory", boolean: true },
  { key: "maxMemory", wire: "max_memory", size: true },
];

/** A numeric job setting (clamped to [min, max]), an on/off one, or a memory size as text. */
export type JobSetting =
  | { key: string; wire: string; min: number; max: number; integer: boolean }
  | { key: string; wire: string; boolean: true }
  | { key: string; wire: string; size: true };

/** Job options by wire name (only those set with the right type). */
export type JobOptions = Record<string, number | boolean | string>;

export interface Settings {
  job: JobOptions;
  hotLineThreshold: number;
  inlayHintsEnabled: boolean;
  /** Raw `torchscope.pythonPath` (not expanded; see interpreter.ts). Empty when unset. */
  pythonPath: string;
  perfettoOrigin: string;
  /** Days a trace stays in the private trace folder. */
  keepTracesDays: number;
  /** Gigabytes the private trace folder may hold; the oldest traces go first. */
  keepTracesGB: number;
  /** `auto`: the worker starts (imports torch) when the server does; `off`: at the first job. */
  prestart: "auto" | "off";
  /** Environment variables for the worker (`torchscope.env`), over `envFile`'s. */
  env: Record<string, string>;
  /** Raw `torchscope.envFile` (empty: the Python extension's `python.envFile`; see workerEnvFile). */
  envFile: string;
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze({
  job: {},
  hotLineThreshold: 5,
  inlayHintsEnabled: true,
  pythonPath: "",
  perfettoOrigin: "https://ui.perfetto.dev",
  keepTracesDays: 7,
  keepTracesGB: 2,
  prestart: "auto",
  env: {},
  envFile: "",
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

/** A map of environment variables: the entries whose value is text (or a number, written as text). */
export function envMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return out;
  }
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (name !== "" && (typeof v === "string" || (typeof v === "number" && Number.isFinite(v)))) {
      out[name] = String(v);
    }
  }
  return out;
}

/**
 * The env file the worker reads: `torchscope.envFile` when set, else the Python extension's
 * `python.envFile` (its default `${workspaceFolder}/.env`; nothing without the extension), with
 * `${workspaceFolder}`, `${userHome}` and `~` expanded. "" when there is none (or it names a
 * folder while none is open).
 */
export function workerEnvFile(envFile: string, pythonEnvFile: unknown, workspaceFolder?: string, home?: string): string {
  const chosen = envFile.trim() !== "" ? envFile : typeof pythonEnvFile === "string" ? pythonEnvFile : "";
  const expanded = expandPath(chosen, workspaceFolder, home);
  return expanded.includes("${") ? "" : expanded;
}

/** The job options, in one call: each `JOB_SETTINGS` row that holds a value of its type
 * (numbers clamped). */
export function jobOptions(config: ConfigurationLike): JobOptions {
  const out: JobOptions = {};
  for (const row of JOB_SETTINGS) {
    if ("boolean" in row) {
      const flag = config.get(row.key);
      if (typeof flag === "boolean") {
        out[row.wire] = flag;
      }
      continue;
    }
    if ("size" in row) {
      const text = config.get(row.key); // sent even when "" (the server's default)
      if (typeof text === "string") {
        out[row.wire] = text.trim();
      }
      continue;
    }
    const value = num(config.get(row.key), Number.NaN, row.min, row.max, row.integer);
    if (!Number.isNaN(value)) {
      out[row.wire] = value;
    }
  }
  return out;
}

/** Read and sanitise the settings: wrong types fall back to defaults, numbers are clamped. */
export function resolveSettings(config: ConfigurationLike): Settings {
  const d = DEFAULT_SETTINGS;
  const origin = str(config.get("perfetto.origin"), d.perfettoOrigin).replace(/\/+$/, "");
  return {
    job: jobOptions(config),
    hotLineThreshold: num(config.get("hotLineThreshold"), d.hotLineThreshold, 0, 100, false),
    inlayHintsEnabled: bool(config.get("inlayHints.enabled"), d.inlayHintsEnabled),
    pythonPath: str(config.get("pythonPath"), d.pythonPath),
    perfettoOrigin: origin === "" ? d.perfettoOrigin : origin,
    keepTracesDays: num(config.get("keepTracesDays"), d.keepTracesDays, 0.01, 3650, false),
    keepTracesGB: num(config.get("keepTracesGB"), d.keepTracesGB, 0.01, 10000, false),
    prestart: config.get("prestart") === "off" ? "off" : "auto",
    env: envMap(config.get("env")),
    envFile: str(config.get("envFile"), d.envFile),
  };
}

/**
 * Settings as the server reads them: `initializationOptions: {settings}` and
 * `workspace/didChangeConfiguration` `{settings}` (snake_case, like the command arguments).
 * `traceDir`: the private trace folder (under the workspace storage; see server.ts);
 * `envFile`: the worker's env file as `workerEnvFile` resolved it ("" clears it).
 */
export function serverSettings(s: Settings, traceDir?: string, envFile = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...s.job,
    hot_line_threshold: s.hotLineThreshold,
    inlay_hints: s.inlayHintsEnabled,
    perfetto_origin: s.perfettoOrigin,
    keep_traces_days: s.keepTracesDays,
    keep_traces_gb: s.keepTracesGB,
    prestart: s.prestart,
    env: s.env,
    env_file: envFile,
  };
  if (traceDir !== undefined) {
    out.trace_dir = traceDir;
  }
  return out;
}

/** The argument object of `torchscope.profile`. */
export function buildProfileArgs(uri: string, line: number, call: string | undefined, s: Settings, memory = false): ProfileArgs {
  const args: ProfileArgs = { uri, line, ...s.job };
  if (memory) {
    args.memory = true; // the "Profile memory" lens: this profile only, whatever the setting
  }
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
  return (e.affectsConfiguration("torchscope") || e.affectsConfiguration("python.envFile")) && !needsRestart(e);
}
