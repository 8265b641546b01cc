import * as assert from "node:assert/strict";
import { WINDOWS_REFUSAL } from "../constants";
import { refusal } from "../platform";

describe("platform check", () => {
  it("refuses Windows with the message naming WSL and Remote-SSH", () => {
    assert.equal(refusal("win32"), WINDOWS_REFUSAL);
    assert.match(WINDOWS_REFUSAL, /WSL/);
    assert.match(WINDOWS_REFUSAL, /Remote-SSH/);
  });

  it("lets Linux and macOS through", () => {
    for (const platform of ["linux", "darwin"]) {
      assert.equal(refusal(platform), undefined);
    }
  });
});
