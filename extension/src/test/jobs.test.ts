import * as assert from "node:assert/strict";
import { ageText, jobItems } from "../jobs";

describe("running jobs' pick", () => {
  it("says each job's pid, rank, command and age", () => {
    const items = jobItems([
      { pid: 41, command: "python -m torchscope.agent train.py", rank: null, world_size: null, age_s: 42 },
      { pid: 42, command: "python -u -m torchscope.agent train.py", rank: 1, world_size: 2, age_s: 11520 },
    ]);
    assert.deepEqual(
      items.map((i) => [i.label, i.description, i.detail, i.pid]),
      [
        ["41", "python -m torchscope.agent train.py", "running for 42 s", 41],
        ["42", "rank 1/2 · python -u -m torchscope.agent train.py", "running for 3.2 h", 42],
      ],
    );
  });

  it("writes ages as torchscope jobs does", () => {
    assert.equal(ageText(119), "119 s");
    assert.equal(ageText(600), "10 min");
    assert.equal(ageText(7200), "2.0 h");
  });
});
