import * as assert from "node:assert/strict";
import { parseLocationArg, reportHeadline, reportTracePath } from "../report";

describe("report reading", () => {
  it("finds the verdict headline", () => {
    assert.equal(reportHeadline({ verdict: { id: "overhead-bound", headline: "overhead-bound (CPU): 2.7 µs" } }), "overhead-bound (CPU): 2.7 µs");
    assert.equal(reportHeadline({ headline: "compute-bound" }), "compute-bound");
    assert.equal(reportHeadline({}), undefined);
    assert.equal(reportHeadline(null), undefined);
  });

  it("finds the trace path", () => {
    assert.equal(reportTracePath({ trace_path: "/t/a.json.gz" }), "/t/a.json.gz");
    assert.equal(reportTracePath({ meta: { trace_path: "/t/b.json" } }), "/t/b.json");
    assert.equal(reportTracePath({ trace: 3 }), undefined);
  });

  it("accepts command arguments from CodeLens, menus and the palette", () => {
    assert.deepEqual(parseLocationArg({ uri: "file:///w/m.py", line: 4 }), { uri: "file:///w/m.py", line: 4 });
    assert.deepEqual(parseLocationArg("file:///w/m.py"), { uri: "file:///w/m.py" });
    assert.deepEqual(parseLocationArg({ uri: "file:///w/m.py", line: -1 }), { uri: "file:///w/m.py" });
    assert.deepEqual(parseLocationArg(undefined), {});
  });
});
