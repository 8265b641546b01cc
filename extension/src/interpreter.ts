/**
 * Which Python runs the server and the user's code, and whether it has a usable torch
 * (pure logic, no `vscode` import; python.ts does the I/O).
 *
 * Order: an explicit `torchscope.pythonPath` (as the formatter and linter extensions'
 * `interpreter` settings win over the Python extension's choice), else the interpreter the
 * Python extension selected for the resource, else `python3`.
 */
import { MIN_TORCH_VERSION } from "./constants";

export type InterpreterSource = "python-extension" | "setting" | "default";

export interface Interpreter {
  /** Executable to run (absolute path, or a command looked up on PATH). */
  path: string;
  source: InterpreterSource;
}

export const DEFAULT_PYTHON = "python3";

export interface InterpreterInputs {
  /** Executable the Python extension selected for the resource, if the extension is there. */
  fromPythonExtension?: string | undefined;
  /** Raw `torchscope.pythonPath`. */
  settingPath?: string | undefined;
  /** For `${workspaceFolder}` in the setting. */
  workspaceFolder?: string | undefined;
  /** For `~` in the setting. */
  home?: string | undefined;
}

/** Expand `${workspaceFolder}`, `${userHome}` and a leading `~` in a configured path. */
export function expandPath(p: string, workspaceFolder?: string, home?: string): string {
  let out = p.trim();
  if (workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(workspaceFolder);
  }
  if (home !== undefined) {
    out = out.split("${userHome}").join(home);
    if (out === "~" || out.startsWith("~/")) {
      out = home + out.slice(1);
    }
  }
  return out;
}

export function chooseInterpreter(inputs: InterpreterInputs): Interpreter {
  const setting = inputs.settingPath?.trim();
  if (setting !== undefined && setting !== "") {
    const expanded = expandPath(setting, inputs.workspaceFolder, inputs.home);
    if (!expanded.includes("${workspaceFolder}")) {
      return { path: expanded, source: "setting" };
    }
  }
  const fromExt = inputs.fromPythonExtension?.trim();
  if (fromExt !== undefined && fromExt !== "") {
    return { path: fromExt, source: "python-extension" };
  }
  return { path: DEFAULT_PYTHON, source: "default" };
}

export function describeInterpreter(i: Interpreter): string {
  const from = {
    "python-extension": "selected in the Python extension",
    setting: "from the torchscope.pythonPath setting",
    default: "default",
  }[i.source];
  return `${i.path} (${from})`;
}

/**
 * Python source printed-and-parsed by `probeTorch`: one JSON line. Reads torch's installed
 * metadata instead of importing it (an import costs seconds); imports only when torch is on the
 * path without metadata (a source checkout).
 */
export const TORCH_PROBE_SCRIPT = [
  "import json, sys",
  "r = {'python': '%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable}",
  "try:",
  "    import importlib.metadata as md, importlib.util as iu",
  "    try:",
  "        r['torch'] = md.version('torch')",
  "    except md.PackageNotFoundError:",
  "        if iu.find_spec('torch') is None:",
  "            raise ModuleNotFoundError(\"No module named 'torch'\")",
  "        import torch",
  "        r['torch'] = torch.__version__",
  "except Exception as e:",
  "    r['error'] = '%s: %s' % (type(e).__name__, e)",
  "print(json.dumps(r))",
].join("\n");

/** `2.13.0+cpu` → [2, 13]; `2.1.0a0+git123` → [2, 1]; `3.11.9` → [3, 11]; garbage → undefined. */
export function parseTorchVersion(version: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)/.exec(version.trim());
  if (m === null) {
    return undefined;
  }
  return [Number(m[1]), Number(m[2])];
}

export function isTorchVersionSupported(version: string, min: readonly [number, number] = MIN_TORCH_VERSION): boolean {
  const v = parseTorchVersion(version);
  if (v === undefined) {
    return false;
  }
  return v[0] > min[0] || (v[0] === min[0] && v[1] >= min[1]);
}

export type TorchCheck =
  | { ok: true; python: string; torch: string }
  | { ok: false; problem: "no-python" | "old-python" | "no-torch" | "old-torch"; message: string; detail?: string };

/** Oldest Python torchscope supports: pyproject.toml's `requires-python` (a test holds them,
 * the extension README and the bundled dependencies' pins to it). */
export const MIN_PYTHON_VERSION: readonly [number, number] = [3, 9];

/** Interpret the probe's outcome. `spawnError` is set when the interpreter could not run at all. */
export function interpretTorchProbe(
  interpreter: string,
  stdout: string,
  spawnError?: string,
  min: readonly [number, number] = MIN_TORCH_VERSION,
): TorchCheck {
  const minText = `${min[0]}.${min[1]}`;
  const fix = `Install it with \`${interpreter} -m pip install torch\`, or choose another interpreter (Python extension or the torchscope.pythonPath setting).`;
  const line = stdout.trim().split("\n").pop() ?? "";
  let parsed: { python?: string; torch?: string; error?: string } | undefined;
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || typeof parsed.python !== "string") {
    return {
      ok: false,
      problem: "no-python",
      message: `torchscope could not run the Python interpreter ${interpreter}${spawnError !== undefined ? `: ${spawnError}` : ""}. Select a Python interpreter that has torch ${minText} or newer (Python extension, or the torchscope.pythonPath setting).`,
    };
  }
  const py = parseTorchVersion(parsed.python);
  if (py !== undefined && (py[0] < MIN_PYTHON_VERSION[0] || (py[0] === MIN_PYTHON_VERSION[0] && py[1] < MIN_PYTHON_VERSION[1]))) {
    return {
      ok: false,
      problem: "old-python",
      message: `${interpreter} is Python ${parsed.python}; torchscope needs Python ${MIN_PYTHON_VERSION[0]}.${MIN_PYTHON_VERSION[1]} or newer with torch ${minText} or newer. Choose another interpreter (Python extension, or the torchscope.pythonPath setting).`,
    };
  }
  if (typeof parsed.torch !== "string") {
    return {
      ok: false,
      problem: "no-torch",
      message: `torch is not installed in ${interpreter}: torchscope needs torch ${minText} or newer. ${fix}`,
      detail: `Python ${parsed.python}${parsed.error !== undefined ? `: ${parsed.error}` : ""}`,
    };
  }
  if (!isTorchVersionSupported(parsed.torch, min)) {
    return {
      ok: false,
      problem: "old-torch",
      message: `torch ${parsed.torch} in ${interpreter} is too old: torchscope needs torch ${minText} or newer. Upgrade it with \`${interpreter} -m pip install --upgrade torch\`, or choose another interpreter.`,
    };
  }
  return { ok: true, python: parsed.python, torch: parsed.torch };
}
