/**
 * Names shared with the language server. Mirrored by `server/torchscope/lsp` (its constants
 * module): change both sides together.
 *
 * The server's `workspace/executeCommand` names are auto-registered as VS Code commands by
 * vscode-languageclient, so the client's own command ids (in `ClientCommands`) must differ.
 */

/** `torch.compile` modes offered (`COMPILE_MODES` in server/torchscope/protocol.py). */
export const COMPILE_MODES = ["default", "reduce-overhead", "max-autotune-no-cudagraphs"] as const;

/** Commands the server executes (`workspace/executeCommand`). */
export const ServerCommands = {
  /** `{uri, line, call?, steps?, warmup?, timeout_s?}` → `{ok, report?, error?}`; reports `$/progress`. */
  profile: "torchscope.profile",
  /** `{path}` → `{ok, report?, error?}`: analyze a Chrome trace written elsewhere. */
  analyzeTrace: "torchscope.analyzeTrace",
  /** `{uri?}`: drop results (diagnostics, hints, lenses) for one document or all. */
  clear: "torchscope.clear",
  /** `{uri, line, call?, mode?, steps?, warmup?, timeout_s?}` → `{ok, report (with compare)?, error?}`. */
  compareCompile: "torchscope.compareCompile",
  /** `{uri, line, call (with {N}), sizes: number[], name?, …}` → `{ok, sweep?, report?, error?}`. */
  sweep: "torchscope.sweep",
  /** `{uri, line, call?, rev?, …}` → `{ok, report (with diff)?, error?}`: the function on disk vs the file at `rev` (HEAD). */
  diff: "torchscope.diff",
  /** `{uri, line, nproc, call?, backend?, …}` → `{ok, report (with ranks)?, error?}`: torchrun on this host. */
  profileRanks: "torchscope.profileRanks",
  /** `{uri, line, fix, call?, …}` → `{ok, fix?, offered?, error?}`: the **Try fix** code action's command (Apply / Discard is a showMessageRequest, the edit a workspace/applyEdit). */
  tryFix: "torchscope.tryFix",
  /** `{uri, line | qualname, entry (command line or words), cwd?, calls?, capture?, …}` → `{ok, report (with run)?, error?}`: the function profiled on the arguments a real program passes it. */
  profileInRun: "torchscope.profileInRun",
  /** `{uri, args?, cwd?, timeout_s?}` → `{ok, tests: [{nodeid, file, imports_target}], cwd, error?}`: the tests pytest collects with the Python extension's settings (the server shows a failure itself). */
  collectTests: "torchscope.collectTests",
  /** `{}` → `{ok, jobs: [{pid, command, rank, world_size, age_s, functions, …}]}`: the running jobs whose agent listens. */
  listJobs: "torchscope.listJobs",
  /** `{uri, line | qualname, pid, calls?}` → `{ok, report (with source, pid, attached)?, error?}`: that job's next calls of the function. */
  profileRunning: "torchscope.profileRunning",
} as const;

/** Custom requests. */
export const Methods = {
  /** `{uri, line}` → `TargetInfo | null`: the innermost function enclosing `line`. */
  target: "torchscope/target",
} as const;

/** Custom notifications from the server. */
export const Notifications = {
  /** `{uri, report}` after every successful profile, whoever started it. */
  profileDone: "torchscope/profileDone",
} as const;

/** The client's VS Code commands (package.json `contributes.commands`). */
export const ClientCommands = {
  profileFunction: "torchscope.profileFunction",
  editCallExpression: "torchscope.editCallExpression",
  openTrace: "torchscope.openTrace",
  /** `{path}` like openTrace: serve the trace once on 127.0.0.1:9001 for the Perfetto UI in a browser. */
  openTraceInBrowser: "torchscope.openTraceInBrowser",
  copyTracePath: "torchscope.copyTracePath",
  revealTraceFile: "torchscope.revealTraceFile",
  analyzeTraceFile: "torchscope.analyzeTraceFile",
  clearResults: "torchscope.clearResults",
  restartServer: "torchscope.restartServer",
  showLog: "torchscope.showLog",
  /** `[{uri, line, mode?}]` from the server's code lens, or the cursor (asks for the mode). */
  compareCompile: "torchscope.compareWithCompile",
  /** Profile compiled: the same job at mode default, no questions; the per-line compiled times. */
  profileCompiled: "torchscope.profileCompiled",
  /** `[{uri, line}]` from the server's code lens, or the cursor: before/after against HEAD. */
  compareLastCommit: "torchscope.compareWithLastCommit",
  /** Asks for a call with `{N}` and the sizes; shows the sweep's table and chart. */
  profileSizes: "torchscope.profileSizes",
  /** `{path}` from the comparison hover: the code Inductor generated for a compiled graph. */
  openGeneratedCode: "torchscope.openGeneratedCode",
  /** Asks for N, then profiles the function on N ranks (`torchscope.profileRanks`). */
  profileOnProcesses: "torchscope.profileOnProcesses",
  /** Picks the program (launch.json, the last one, a command line), then `torchscope.profileInRun`. */
  profileInRun: "torchscope.profileFunctionInRun",
  /** Picks a running job (`torchscope.listJobs`), then `torchscope.profileRunning`. */
  profileRunning: "torchscope.profileFunctionInRunningJob",
  /** The Getting Started walkthrough's step: the guide's example into the workspace, opened. */
  openExample: "torchscope.openExample",
} as const;

/** Client commands the server's hover markdown may run (command links). */
export const HOVER_COMMANDS: readonly string[] = [
  ClientCommands.openTrace,
  ClientCommands.openGeneratedCode,
  ClientCommands.compareCompile,
  ClientCommands.profileFunction,
];

/** Diagnostic `source` of everything the server publishes. */
export const DIAGNOSTIC_SOURCE = "torchscope";

/** Settings section (`torchscope.*`). */
export const SETTINGS_SECTION = "torchscope";

/** Name of the log output channel (client and server logs). */
export const LOG_CHANNEL_NAME = "torchscope";

/** Language client id and name. */
export const CLIENT_ID = "torchscope";
export const CLIENT_NAME = "torchscope";

/** Oldest torch the worker supports. */
export const MIN_TORCH_VERSION: readonly [number, number] = [2, 1];

/** Debounce for server restarts after interpreter or settings changes (ms). */
export const RESTART_DEBOUNCE_MS = 1000;

/** Workspace-state key prefix for remembered call expressions. */
export const CALL_EXPRESSION_STATE_PREFIX = "torchscope.call:";

/** Workspace-state key prefix for the remembered sweep call and sizes. */
export const SWEEP_STATE_PREFIX = "torchscope.sweep:";

/** Mirrors ``torchscope.support.WINDOWS_REFUSAL``: on Windows the extension refuses with it. */
export const WINDOWS_REFUSAL =
  "torchscope does not run on Windows (its worker needs POSIX process APIs): run it in WSL, " +
  "or on a Linux machine through VS Code's Remote-SSH";
