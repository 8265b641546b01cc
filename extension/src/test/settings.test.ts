import * as assert from "node:assert/strict";
import { buildProfileArgs, DEFAULT_SETTINGS, needsNotify, needsRestart, resolveSettings, serverSettings, type ConfigurationLike } from "../settings";

function config(values: Record<string, unknown>): ConfigurationLike {
  return {
    get(section: string): unknown {
      return values[section];
    },
  };
}

function change(...sections: string[]) {
  return {
    affectsConfiguration: (s: string) => sections.some((c) => c === s || c.startsWith(`${s}.`)),
  };
}

describe("settings resolution", () => {
  it("uses the defaults when nothing is set", () => {
    assert.deepEqual(resolveSettings(config({})), DEFAULT_SETTINGS);
  });

  it("reads every setting", () => {
    const s = resolveSettings(
      config({
        steps: 7,
        warmup: 0,
        timeout: 30.5,
        hotLineThreshold: 12.5,
        "inlayHints.enabled": false,
        pythonPath: " /opt/py/bin/python ",
        "perfetto.origin": "https://perfetto.example.org/",
        keepTraces: 50,
        maxMemory: " 12G ",
      }),
    );
    assert.deepEqual(s, {
      steps: 7,
      warmup: 0,
      timeoutSeconds: 30.5,
      hotLineThreshold: 12.5,
      inlayHintsEnabled: false,
      pythonPath: "/opt/py/bin/python",
      perfettoOrigin: "https://perfetto.example.org",
      keepTraces: 50,
      maxMemory: "12G",
    });
  });

  it("falls back on wrong types and clamps out-of-range numbers", () => {
    const s = resolveSettings(
      config({ steps: "5", warmup: -2, timeout: 0, hotLineThreshold: 250, "inlayHints.enabled": "yes", pythonPath: 3, "perfetto.origin": "" }),
    );
    assert.equal(s.steps, DEFAULT_SETTINGS.steps);
    assert.equal(s.warmup, 0);
    assert.equal(s.timeoutSeconds, 1);
    assert.equal(s.hotLineThreshold, 100);
    assert.equal(s.inlayHintsEnabled, true);
    assert.equal(s.pythonPath, "");
    assert.equal(s.perfettoOrigin, DEFAULT_SETTINGS.perfettoOrigin);
    assert.equal(resolveSettings(config({ keepTraces: 0 })).keepTraces, 1);
    assert.equal(resolveSettings(config({ keepTraces: "many" })).keepTraces, 20);
  });

  it("rounds step counts", () => {
    assert.equal(resolveSettings(config({ steps: 2.6 })).steps, 3);
    assert.equal(resolveSettings(config({ steps: Number.NaN })).steps, DEFAULT_SETTINGS.steps);
  });

  it("maps to the server's snake_case settings", () => {
    assert.deepEqual(serverSettings(DEFAULT_SETTINGS), {
      steps: 5,
      warmup: 3,
      timeout_s: 120,
      hot_line_threshold: 5,
      inlay_hints: true,
      perfetto_origin: "https://ui.perfetto.dev",
      keep_traces: 20,
    });
    assert.equal(serverSettings(DEFAULT_SETTINGS, "/ws/storage/traces").trace_dir, "/ws/storage/traces");
    assert.equal(serverSettings({ ...DEFAULT_SETTINGS, maxMemory: "1G" }).max_memory, "1G");
  });

  it("builds the profile command's argument", () => {
    assert.deepEqual(buildProfileArgs("file:///w/m.py", 4, undefined, DEFAULT_SETTINGS), {
      uri: "file:///w/m.py",
      line: 4,
      steps: 5,
      warmup: 3,
      timeout_s: 120,
    });
    assert.equal(buildProfileArgs("file:///w/m.py", 4, "fn(1)", DEFAULT_SETTINGS).call, "fn(1)");
  });

  it("restarts only for the interpreter, notifies for the rest", () => {
    assert.equal(needsRestart(change("torchscope.pythonPath")), true);
    assert.equal(needsNotify(change("torchscope.pythonPath")), false);
    assert.equal(needsRestart(change("torchscope.steps")), false);
    assert.equal(needsNotify(change("torchscope.steps")), true);
    assert.equal(needsNotify(change("editor.fontSize")), false);
  });
});
