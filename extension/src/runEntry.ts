/**
 * **Profile this function in a run…**: which program to run (pure, no `vscode`). The choices
 * are the workspace's launch.json Python configurations (`type` `python` or `debugpy`, with
 * `program` or `module`) and a free command line; the one picked is remembered per function.
 */

/** A launch.json configuration, as `vscode.workspace.getConfiguration("launch")` gives it. */
export interface LaunchConfig {
  name?: unknown;
  type?: unknown;
  request?: unknown;
  program?: unknown;
  module?: unknown;
  args?: unknown;
}

/** One choice: a name to show and the program's words (`["python", "train.py", …]`). */
export interface RunChoice {
  label: string;
  entry: string[];
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
  return { label, entry: [...head, ...args.map((a) => substitute(a, folder, file))] };
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

/** The choices in order: the one remembered for the function first, then launch.json's. */
export function runChoices(configs: readonly LaunchConfig[], folder: string, file: string, remembered: string[] | undefined): RunChoice[] {
  const found = configs.map((c) => launchChoice(c, folder, file)).filter((c): c is RunChoice => c !== undefined);
  if (remembered === undefined || remembered.length === 0) {
    return found;
  }
  const same = (c: RunChoice): boolean => commandLine(c.entry) === commandLine(remembered);
  const last = found.find(same) ?? { label: commandLine(remembered), entry: remembered };
  return [last, ...found.filter((c) => !same(c))];
}
