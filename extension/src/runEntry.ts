/**
 * **Profile this function in a run…**: which program to run (pure, no `vscode`). The choices
 * are the workspace's launch.json Python configurations (`type` `python` or `debugpy`, with
 * `program` or `module`, run in their `cwd` with their `env` and `envFile`), the tests the Python extension's test explorer
 * would list (collected by the server: `torchscope.collectTests`) and a free command line; the
 * one picked is remembered per function.
 */
import * as path from "node:path";
import { envMap } from "./settings";

/** A launch.json configuration, as `vscode.workspace.getConfiguration("launch")` gives it. */
export interface LaunchConfig {
  name?: unknown;
  type?: unknown;
  request?: unknown;
  program?: unknown;
  module?: unknown;
  args?: unknown;
  cwd?: unknown;
  env?: unknown;
  envFile?: unknown;
}

/** The program to run: its words (`["python", "train.py", …]`), the folder it runs in
 * (undefined: the workspace folder) and, from a launch configuration, its `env` and `envFile`
 * (the worker that runs it starts with them, over `torchscope.env`). This is what is
 * remembered per function. */
export interface RunProgram {
  entry: string[];
  cwd?: string;
  env?: Record<string, string>;
  envFile?: string;
}

/** One choice: a name to show, the program, and a note (`detail`) to show under it. */
export interface RunChoice extends RunProgram {
  label: string;
  detail?: string;
}

/** A test as `torchscope.collectTests` answers it. */
export interface CollectedTest {
  nodeid: string;
  file: string;
  imports_target: boolean;
}

/** `torchscope.collectTests`' answer. */
export interface CollectedTests {
  ok: boolean;
  tests: CollectedTest[];
  cwd: string | null;
  error?: string;
}

/** The Python extension's pytest settings (`python.testing.*`), as its test explorer uses them. */
export interface PytestSettings {
  args: string[];
  cwd: string | undefined;
}

/** workspaceState key of the program last used for a function. */
export const RUN_ENTRY_STATE_PREFIX = "torchscope.runEntry:";

export function runEntryKey(documentUri: string, qualname: string): string {
  return `${RUN_ENTRY_STATE_PREFIX}${documentUri}#${qualname}`;
}

/** `${workspaceFolder}` and `${file}` filled in; other variables are left as they are. */
function substitute(text: string, folder: string, file: string): string {
  return text.replaceAll("${workspaceFolder}", folder).replaceAll("${file}", file);
}

/** A folder setting with variables filled in, relative to the workspace folder; undefined if unset. */
function folderSetting(value: unknown, folder: string, file: string): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? path.resolve(folder, substitute(value.trim(), folder, file)) : undefined;
}

/** The program of a Python launch configuration, or undefined for any other configuration. */
export function launchChoice(config: LaunchConfig, folder: string, file: string): RunChoice | undefined {
  if ((config.type !== "python" && config.type !== "debugpy") || (config.request !== undefined && config.request !== "launch")) {
    return undefined;
  }
  const rawArgs = config.args;
  const args = Array.isArray(rawArgs)
    ? rawArgs.filter((a): a is string => typeof a === "string")
    : typeof rawArgs === "string" && rawArgs.trim() !== ""
      ? rawArgs.trim().split(/\s+/)
      : [];
  let head: string[];
  if (typeof config.program === "string" && config.program !== "") {
    head = ["python", substitute(config.program, folder, file)];
  } else if (typeof config.module === "string" && config.module !== "") {
    head = ["-m", config.module];
  } else {
    return undefined;
  }
  const label = typeof config.name === "string" && config.name !== "" ? config.name : head.join(" ");
  const choice: RunChoice = { label, entry: [...head, ...args.map((a) => substitute(a, folder, file))] };
  const cwd = folderSetting(config.cwd, folder, file);
  const env = launchEnv(config.env, folder, file);
  const envFile = folderSetting(config.envFile, folder, file);
  return {
    ...choice,
    ...(cwd !== undefined ? { cwd } : {}),
    ...(env !== undefined ? { env } : {}),
    ...(envFile !== undefined ? { envFile } : {}),
  };
}

/** A launch configuration's `env`: its text values, variables filled in (undefined: none). */
function launchEnv(value: unknown, folder: string, file: string): Record<string, string> | undefined {
  const env = envMap(value);
  for (const name of Object.keys(env)) {
    env[name] = substitute(env[name], folder, file);
  }
  return Object.keys(env).length > 0 ? env : undefined;
}

/**
 * The Python extension's pytest settings, read through `get` (`python.testing`'s section);
 * undefined when pytest is not enabled there — its test explorer then lists no pytest tests.
 */
export function pytestSettings(get: (key: string) => unknown, folder: string, file: string): PytestSettings | undefined {
  if (get("pytestEnabled") !== true) {
    return undefined;
  }
  const raw = get("pytestArgs");
  const args = Array.isArray(raw) ? raw.filter((a): a is string => typeof a === "string").map((a) => substitute(a, folder, file)) : [];
  return { args, cwd: folderSetting(get("cwd"), folder, file) };
}

/** A collected test as a choice: `pytest NODEID`, run where it was collected. */
export function testChoice(test: CollectedTest, cwd: string): RunChoice {
  const detail = test.imports_target ? "test: imports this function's module" : "test";
  return { label: test.nodeid, entry: ["pytest", test.nodeid], cwd, detail };
}

/** The tests of a `torchscope.collectTests` answer as choices (those it did collect, even when it failed). */
export function testChoices(answer: CollectedTests | undefined): RunChoice[] {
  if (answer === undefined || answer.cwd === null || !Array.isArray(answer.tests)) {
    return [];
  }
  const cwd = answer.cwd;
  return answer.tests.map((t) => testChoice(t, cwd));
}

/** A command line shown as the user would type it (words with spaces quoted). */
export function commandLine(entry: readonly string[]): string {
  return entry.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\"'\"'")}'`)).join(" ");
}

/** A typed command line as words: whitespace separates them, quotes ('…' or "…") group them. */
export function splitCommandLine(text: string): string[] {
  const words: string[] = [];
  for (const m of text.matchAll(/(?:'([^']*)'|"([^"]*)"|(\S+))/g)) {
    const groups: (string | undefined)[] = m.slice(1); // the one group that matched
    words.push(groups.find((g) => g !== undefined) ?? "");
  }
  return words;
}

/** What workspaceState holds for a function: `{entry, cwd?}`, or the words alone (before cwd). */
export function rememberedProgram(stored: unknown): RunProgram | undefined {
  const isWords = (w: unknown): w is string[] => Array.isArray(w) && w.length > 0 && w.every((x) => typeof x === "string");
  if (isWords(stored)) {
    return { entry: stored };
  }
  if (typeof stored === "object" && stored !== null) {
    const { entry, cwd, env, envFile } = stored as { entry?: unknown; cwd?: unknown; env?: unknown; envFile?: unknown };
    if (isWords(entry)) {
      const vars = envMap(env);
      return programOf({
        entry,
        ...(typeof cwd === "string" && cwd !== "" ? { cwd } : {}),
        ...(Object.keys(vars).length > 0 ? { env: vars } : {}),
        ...(typeof envFile === "string" && envFile !== "" ? { envFile } : {}),
      });
    }
  }
  return undefined;
}

/** The program of a choice, as it is sent and remembered. */
export function programOf(choice: RunProgram): RunProgram {
  const { entry, cwd, env, envFile } = choice;
  return {
    entry,
    ...(cwd !== undefined ? { cwd } : {}),
    ...(env !== undefined ? { env } : {}),
    ...(envFile !== undefined ? { envFile } : {}),
  };
}

/** The program's part of `torchscope.profileInRun`'s argument (server-side names). */
export function runArgs(program: RunProgram): { entry: string[]; cwd?: string; env?: Record<string, string>; env_file?: string } {
  const { entry, cwd, env, envFile } = program;
  return {
    entry,
    ...(cwd !== undefined ? { cwd } : {}),
    ...(env !== undefined ? { env } : {}),
    ...(envFile !== undefined ? { env_file: envFile } : {}),
  };
}

function sameProgram(a: RunProgram, b: RunProgram): boolean {
  return commandLine(a.entry) === commandLine(b.entry) && (a.cwd ?? "") === (b.cwd ?? "");
}

/** The choices in order: the one remembered for the function first, then launch.json's, then the tests. */
export function runChoices(
  configs: readonly LaunchConfig[],
  folder: string,
  file: string,
  remembered: RunProgram | undefined,
  tests: readonly RunChoice[] = [],
): RunChoice[] {
  const launch = configs.map((c) => launchChoice(c, folder, file)).filter((c): c is RunChoice => c !== undefined);
  const found = [...launch, ...tests];
  if (remembered === undefined || remembered.entry.length === 0) {
    return found;
  }
  const last = found.find((c) => sameProgram(c, remembered)) ?? { label: commandLine(remembered.entry), ...programOf(remembered) };
  return [last, ...found.filter((c) => !sameProgram(c, remembered))];
}

/** `torchscope run --mode`: which calls of the function to profile. */
export type RunMode = "any" | "train" | "eval";

/** The run pick's second step: which calls, the one used last first. */
export function runModeItems(remembered: RunMode | undefined): { label: string; description: string; mode: RunMode }[] {
  const items: { label: string; description: string; mode: RunMode }[] = [
    { label: "Any calls", description: "the first calls the program makes, whatever their mode", mode: "any" },
    { label: "Training calls", description: "grad enabled and, for a module, .training (--mode train)", mode: "train" },
    { label: "Evaluation calls", description: "no grad, or a module in eval() (--mode eval)", mode: "eval" },
  ];
  const first = items.findIndex((i) => i.mode === remembered);
  return first > 0 ? [items[first], ...items.filter((_, i) => i !== first)] : items;
}

/** A run mode from a command argument or workspace state (undefined when it is none). */
export function runModeOf(value: unknown): RunMode | undefined {
  return value === "any" || value === "train" || value === "eval" ? value : undefined;
}
