import * as assert from "node:assert/strict";
import {
  chooseInterpreter,
  DEFAULT_PYTHON,
  describeInterpreter,
  expandPath,
  interpretTorchProbe,
  isTorchVersionSupported,
  parseTorchVersion,
} from "../interpreter";

describe("interpreter fallback order", () => {
  it("an explicit torchscope.pythonPath wins over the Python extension's interpreter", () => {
    assert.deepEqual(chooseInterpreter({ fromPythonExtension: "/env/bin/python", settingPath: "/other/python" }), {
      path: "/other/python",
      source: "setting",
    });
    assert.deepEqual(chooseInterpreter({ fromPythonExtension: undefined, settingPath: "/opt/py/bin/python" }), {
      path: "/opt/py/bin/python",
      source: "setting",
    });
  });

  it("else takes the Python extension's choice", () => {
    assert.deepEqual(chooseInterpreter({ fromPythonExtension: "/env/bin/python", settingPath: "" }), {
      path: "/env/bin/python",
      source: "python-extension",
    });
    assert.deepEqual(chooseInterpreter({ fromPythonExtension: "/env/bin/python", settingPath: "  " }).source, "python-extension");
    // A setting that names ${workspaceFolder} with no folder open is no choice: the extension's is.
    assert.deepEqual(chooseInterpreter({ fromPythonExtension: "/env/bin/python", settingPath: "${workspaceFolder}/py" }).source, "python-extension");
  });

  it("falls back to python3", () => {
    assert.deepEqual(chooseInterpreter({}), { path: DEFAULT_PYTHON, source: "default" });
    assert.deepEqual(chooseInterpreter({ settingPath: "  " }), { path: "python3", source: "default" });
  });

  it("expands ${workspaceFolder} and ~ in the setting", () => {
    assert.equal(
      chooseInterpreter({ settingPath: "${workspaceFolder}/.venv/bin/python", workspaceFolder: "/w" }).path,
      "/w/.venv/bin/python",
    );
    assert.equal(chooseInterpreter({ settingPath: "~/venv/bin/python", home: "/home/u" }).path, "/home/u/venv/bin/python");
    assert.equal(expandPath("${userHome}/py", undefined, "/h"), "/h/py");
    assert.equal(expandPath("/a~b", "/w", "/h"), "/a~b");
  });

  it("ignores a setting with ${workspaceFolder} when there is no folder", () => {
    assert.deepEqual(chooseInterpreter({ settingPath: "${workspaceFolder}/.venv/bin/python" }), { path: "python3", source: "default" });
  });

  it("describes where the interpreter came from", () => {
    assert.match(describeInterpreter({ path: "/x/python", source: "setting" }), /torchscope.pythonPath/);
  });
});

describe("torch check", () => {
  it("parses versions", () => {
    assert.deepEqual(parseTorchVersion("2.13.0+cpu"), [2, 13]);
    assert.deepEqual(parseTorchVersion("2.1.0a0+git1234"), [2, 1]);
    assert.equal(parseTorchVersion("nightly"), undefined);
  });

  it("needs torch 2.1 or newer", () => {
    assert.equal(isTorchVersionSupported("2.1.0"), true);
    assert.equal(isTorchVersionSupported("2.13.0+cpu"), true);
    assert.equal(isTorchVersionSupported("3.0.0"), true);
    assert.equal(isTorchVersionSupported("2.0.1"), false);
    assert.equal(isTorchVersionSupported("1.13.1"), false);
    assert.equal(isTorchVersionSupported("junk"), false);
  });

  it("accepts a good interpreter", () => {
    const r = interpretTorchProbe("/v/bin/python", 'noise\n{"python": "3.11.9", "torch": "2.13.0+cpu"}\n');
    assert.deepEqual(r, { ok: true, python: "3.11.9", torch: "2.13.0+cpu" });
  });

  it("says how to install a missing torch", () => {
    const r = interpretTorchProbe("/v/bin/python", '{"python": "3.12.1", "error": "ModuleNotFoundError: No module named \'torch\'"}');
    assert.ok(!r.ok);
    assert.equal(r.problem, "no-torch");
    assert.match(r.message, /torch is not installed in \/v\/bin\/python/);
    assert.match(r.message, /\/v\/bin\/python -m pip install torch/);
  });

  it("says how to upgrade an old torch", () => {
    const r = interpretTorchProbe("python3", '{"python": "3.10.0", "torch": "1.13.1"}');
    assert.ok(!r.ok);
    assert.equal(r.problem, "old-torch");
    assert.match(r.message, /too old/);
    assert.match(r.message, /pip install --upgrade torch/);
  });

  it("needs Python 3.9 or newer (pyproject.toml's requires-python)", () => {
    const r = interpretTorchProbe("/old/python", '{"python": "3.8.18", "torch": "2.2.0"}');
    assert.ok(!r.ok);
    assert.equal(r.problem, "old-python");
    assert.match(r.message, /Python 3\.9 or newer/);
    assert.ok(interpretTorchProbe("/py39/python", '{"python": "3.9.18", "torch": "2.2.0"}').ok);
  });

  it("reports an interpreter that does not run", () => {
    const r = interpretTorchProbe("/nope/python", "", "spawn /nope/python ENOENT");
    assert.ok(!r.ok);
    assert.equal(r.problem, "no-python");
    assert.match(r.message, /ENOENT/);
  });
});
