import * as assert from "node:assert/strict";
import {
  commandLine,
  launchChoice,
  programOf,
  pytestSettings,
  rememberedProgram,
  runArgs,
  type RunChoice,
  runChoices,
  runEntryKey,
  runModeItems,
  runModeOf,
  splitCommandLine,
  testChoices,
} from "../runEntry";

const FOLDER = "/work/project";
const FILE = "/work/project/model.py";

describe("run entries from launch.json", () => {
  it("takes a Python program with its arguments, filling in ${workspaceFolder}", () => {
    const choice = launchChoice(
      { name: "train", type: "debugpy", request: "launch", program: "${workspaceFolder}/train.py", args: ["--steps", "3"] },
      FOLDER,
      FILE,
    );
    assert.deepEqual(choice, { label: "train", entry: ["python", "/work/project/train.py", "--steps", "3"] });
  });

  it("takes a module, and a string of arguments", () => {
    const choice = launchChoice({ type: "python", module: "pkg.train", args: "--steps 3" }, FOLDER, FILE);
    assert.deepEqual(choice, { label: "-m pkg.train", entry: ["-m", "pkg.train", "--steps", "3"] });
  });

  it("skips other debuggers, attach configurations and configurations without a program", () => {
    assert.equal(launchChoice({ type: "node", program: "x.js" }, FOLDER, FILE), undefined);
    assert.equal(launchChoice({ type: "debugpy", request: "attach", program: "x.py" }, FOLDER, FILE), undefined);
    assert.equal(launchChoice({ type: "debugpy", request: "launch" }, FOLDER, FILE), undefined);
  });

  it("puts the program remembered for the function first, once", () => {
    const configs = [
      { name: "a", type: "debugpy", program: "a.py" },
      { name: "b", type: "debugpy", program: "b.py" },
    ];
    assert.deepEqual(runChoices(configs, FOLDER, FILE, { entry: ["python", "b.py"] }).map((c) => c.label), ["b", "a"]);
    assert.deepEqual(runChoices(configs, FOLDER, FILE, { entry: ["pytest", "t.py"] }).map((c) => c.label), ["pytest t.py", "a", "b"]);
    assert.deepEqual(runChoices(configs, FOLDER, FILE, undefined).map((c) => c.label), ["a", "b"]);
  });

  it("splits a typed command line, quotes grouping words", () => {
    assert.deepEqual(splitCommandLine(" python 'my train.py'  --name \"a b\" -x "), ["python", "my train.py", "--name", "a b", "-x"]);
    assert.deepEqual(splitCommandLine("   "), []);
  });

  it("quotes words with spaces, and keys the memory by function", () => {
    assert.equal(commandLine(["python", "my train.py", "--x=1"]), "python 'my train.py' --x=1");
    assert.equal(runEntryKey("file:///m.py", "A.forward"), "torchscope.runEntry:file:///m.py#A.forward");
  });

  it("runs a configuration in its cwd, with variables filled in and relative to the folder", () => {
    const config = { name: "t", type: "debugpy", program: "train.py", args: ["data.txt"] };
    assert.deepEqual(launchChoice({ ...config, cwd: "${workspaceFolder}/runs" }, FOLDER, FILE), {
      label: "t",
      entry: ["python", "train.py", "data.txt"],
      cwd: "/work/project/runs",
    });
    assert.equal(launchChoice({ ...config, cwd: "sub" }, FOLDER, FILE)?.cwd, "/work/project/sub");
    assert.equal(launchChoice({ ...config, cwd: "/abs/dir" }, FOLDER, FILE)?.cwd, "/abs/dir");
    assert.equal(launchChoice({ ...config, cwd: "" }, FOLDER, FILE)?.cwd, undefined);
    const choice: RunChoice = { label: "t", entry: ["python", "x.py"], cwd: "/d", detail: "d" };
    assert.deepEqual(programOf(choice), { entry: ["python", "x.py"], cwd: "/d" });
  });

  it("runs a configuration with its env and envFile, variables filled in (issue 53)", () => {
    const config = {
      name: "gpu 1",
      type: "debugpy",
      program: "train.py",
      env: { CUDA_VISIBLE_DEVICES: "1", DATA: "${workspaceFolder}/data", DROPPED: null },
      envFile: "${workspaceFolder}/gpu.env",
    };
    const choice = launchChoice(config, FOLDER, FILE);
    assert.deepEqual(choice, {
      label: "gpu 1",
      entry: ["python", "train.py"],
      env: { CUDA_VISIBLE_DEVICES: "1", DATA: "/work/project/data" },
      envFile: "/work/project/gpu.env",
    });
    // Sent to the server under its names, and remembered with the program.
    assert.deepEqual(runArgs(programOf(choice)), {
      entry: ["python", "train.py"],
      env: { CUDA_VISIBLE_DEVICES: "1", DATA: "/work/project/data" },
      env_file: "/work/project/gpu.env",
    });
    assert.deepEqual(rememberedProgram(JSON.parse(JSON.stringify(programOf(choice)))), programOf(choice));
    assert.deepEqual(runArgs({ entry: ["pytest"] }), { entry: ["pytest"] });
    assert.equal(launchChoice({ ...config, env: "A=1", envFile: "" }, FOLDER, FILE)?.env, undefined);
  });

  it("remembers the program with its cwd, and reads what was remembered before cwd", () => {
    assert.deepEqual(rememberedProgram(["python", "a.py"]), { entry: ["python", "a.py"] });
    assert.deepEqual(rememberedProgram({ entry: ["pytest", "t.py::x"], cwd: "/w/sub" }), { entry: ["pytest", "t.py::x"], cwd: "/w/sub" });
    assert.equal(rememberedProgram({ entry: [] }), undefined);
    assert.equal(rememberedProgram({ uri: "file:///m.py", line: 3 }), undefined);
    const configs = [{ name: "a", type: "debugpy", program: "a.py", cwd: "x" }];
    // the same words in another folder are another program
    assert.deepEqual(runChoices(configs, FOLDER, FILE, { entry: ["python", "a.py"] }).map((c) => c.label), ["python a.py", "a"]);
    assert.deepEqual(runChoices(configs, FOLDER, FILE, { entry: ["python", "a.py"], cwd: "/work/project/x" }).map((c) => c.label), ["a"]);
  });
});

describe("tests from the Python extension's settings", () => {
  const settings = (values: Record<string, unknown>) => (key: string) => values[key];

  it("lists tests only where pytest is enabled, with its arguments and cwd", () => {
    assert.equal(pytestSettings(settings({}), FOLDER, FILE), undefined);
    assert.equal(pytestSettings(settings({ pytestEnabled: false, pytestArgs: ["tests"] }), FOLDER, FILE), undefined);
    assert.deepEqual(pytestSettings(settings({ pytestEnabled: true }), FOLDER, FILE), { args: [], cwd: undefined });
    assert.deepEqual(
      pytestSettings(settings({ pytestEnabled: true, pytestArgs: ["${workspaceFolder}/tests", "-k", 3], cwd: "${workspaceFolder}/src" }), FOLDER, FILE),
      { args: ["/work/project/tests", "-k"], cwd: "/work/project/src" },
    );
  });

  it("offers each collected test as `pytest NODEID` in the folder it was collected in, after launch.json", () => {
    const answer = {
      ok: false,
      error: "could not collect every test",
      cwd: "/work/project/src",
      tests: [
        { nodeid: "tests/test_model.py::test_scale[1]", file: "/work/project/src/tests/test_model.py", imports_target: true },
        { nodeid: "tests/test_other.py::test_x", file: "/work/project/src/tests/test_other.py", imports_target: false },
      ],
    };
    const tests = testChoices(answer);
    assert.deepEqual(tests[0], {
      label: "tests/test_model.py::test_scale[1]",
      entry: ["pytest", "tests/test_model.py::test_scale[1]"],
      cwd: "/work/project/src",
      detail: "test: imports this function's module",
    });
    assert.equal(tests[1].detail, "test");
    assert.deepEqual(testChoices(undefined), []);
    assert.deepEqual(testChoices({ ok: false, error: "bad", tests: [], cwd: null }), []);
    const configs = [{ name: "train", type: "debugpy", program: "train.py" }];
    const remembered = { entry: ["pytest", "tests/test_other.py::test_x"], cwd: "/work/project/src" };
    assert.deepEqual(runChoices(configs, FOLDER, FILE, undefined, tests).map((c) => c.label), [
      "train",
      "tests/test_model.py::test_scale[1]",
      "tests/test_other.py::test_x",
    ]);
    assert.deepEqual(runChoices(configs, FOLDER, FILE, remembered, tests).map((c) => c.label), [
      "tests/test_other.py::test_x",
      "train",
      "tests/test_model.py::test_scale[1]",
    ]);
  });
});

describe("the run pick's mode step", () => {
  it("offers any, train and eval, the one used last first", () => {
    assert.deepEqual(runModeItems(undefined).map((i) => i.mode), ["any", "train", "eval"]);
    assert.deepEqual(runModeItems("eval").map((i) => i.mode), ["eval", "any", "train"]);
  });

  it("reads a mode from an argument or state, and nothing else", () => {
    assert.equal(runModeOf("train"), "train");
    assert.equal(runModeOf("fast"), undefined);
    assert.equal(runModeOf(undefined), undefined);
  });
});
