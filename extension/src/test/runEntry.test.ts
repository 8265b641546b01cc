import * as assert from "node:assert/strict";
import { commandLine, launchChoice, runChoices, runEntryKey, splitCommandLine } from "../runEntry";

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
    assert.deepEqual(runChoices(configs, FOLDER, FILE, ["python", "b.py"]).map((c) => c.label), ["b", "a"]);
    assert.deepEqual(runChoices(configs, FOLDER, FILE, ["pytest", "t.py"]).map((c) => c.label), ["pytest t.py", "a", "b"]);
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
});
