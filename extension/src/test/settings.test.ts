import * as assert from "node:assert/strict";
import {
  buildProfileArgs,
  DEFAULT_SETTINGS,
  envMap,
  needsNotify,
  needsRestart,
  resolveSettings,
  serverSettings,
  workerEnvFile,
  type ConfigurationLike,
} from "../settings";

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
  it("uses the defaults when nothing is set (job options: the server's JobOptions defaults)", () => {
    assert.deepEqual(resolveSettings(config({})), DEFAULT_SETTINGS);
    assert.deepEqual(DEFAULT_SETTINGS.job, {});
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
        keepTracesDays: 30,
        keepTracesGB: 0.5,
        maxMemory: " 12G ",
        prestart: "off",
        env: { CUDA_VISIBLE_DEVICES: "1" },
        envFile: "/w/gpu.env",
      }),
    );
    assert.deepEqual(s, {
      job: { steps: 7, warmup: 0, timeout_s: 30.5, max_memory: "12G" },
      hotLineThreshold: 12.5,
      inlayHintsEnabled: false,
      pythonPath: "/opt/py/bin/python",
      perfettoOrigin: "https://perfetto.example.org",
      keepTracesDays: 30,
      keepTracesGB: 0.5,
      prestart: "off",
      env: { CUDA_VISIBLE_DEVICES: "1" },
      envFile: "/w/gpu.env",
    });
  });

  it("falls back on wrong types and clamps out-of-range numbers", () => {
    const s = resolveSettings(
      config({ steps: "5", warmup: -2, timeout: 0, hotLineThreshold: 250, "inlayHints.enabled": "yes", pythonPath: 3, "perfetto.origin": "" }),
    );
    assert.equal(s.job.steps, undefined); // left out: the server's default applies
    assert.equal(s.job.warmup, 0);
    assert.equal(s.job.timeout_s, 1);
    assert.equal(s.hotLineThreshold, 100);
    assert.equal(s.inlayHintsEnabled, true);
    assert.equal(s.pythonPath, "");
    assert.equal(s.perfettoOrigin, DEFAULT_SETTINGS.perfettoOrigin);
    assert.equal(resolveSettings(config({ keepTracesDays: 0 })).keepTracesDays, 0.01);
    assert.equal(resolveSettings(config({ keepTracesGB: "many" })).keepTracesGB, 2);
    assert.equal(resolveSettings(config({ maxMemory: 12 })).job.max_memory, undefined);
  });

  it("rounds step counts", () => {
    assert.equal(resolveSettings(config({ steps: 2.6 })).job.steps, 3);
    assert.equal(resolveSettings(config({ steps: Number.NaN })).job.steps, undefined);
  });

  it("maps to the server's snake_case settings", () => {
    const s = resolveSettings(config({ steps: 5, warmup: 3, timeout: 120 }));
    assert.deepEqual(serverSettings(s), {
      steps: 5,
      warmup: 3,
      timeout_s: 120,
      hot_line_threshold: 5,
      inlay_hints: true,
      perfetto_origin: "https://ui.perfetto.dev",
      keep_traces_days: 7,
      keep_traces_gb: 2,
      prestart: "auto",
      env: {},
      env_file: "",
    });
    assert.equal(serverSettings(DEFAULT_SETTINGS, "/ws/storage/traces").trace_dir, "/ws/storage/traces");
    // a memory size is sent as set, "" too (the server's default: half the RAM)
    assert.equal(serverSettings(resolveSettings(config({ maxMemory: "1G" }))).max_memory, "1G");
    assert.equal(serverSettings(resolveSettings(config({ maxMemory: "" }))).max_memory, "");
  });

  it("builds the profile command's argument", () => {
    const s = resolveSettings(config({ steps: 5, warmup: 3, timeout: 120 }));
    assert.deepEqual(buildProfileArgs("file:///w/m.py", 4, undefined, s), {
      uri: "file:///w/m.py",
      line: 4,
      steps: 5,
      warmup: 3,
      timeout_s: 120,
    });
    assert.equal(buildProfileArgs("file:///w/m.py", 4, "fn(1)", DEFAULT_SETTINGS).call, "fn(1)");
  });

  it("sends torchscope.memory as the memory job option, and the lens's memory for one profile", () => {
    const on = resolveSettings(config({ memory: true }));
    assert.equal(on.job.memory, true);
    assert.equal(serverSettings(on).memory, true);
    assert.equal(resolveSettings(config({ memory: "yes" })).job.memory, undefined);
    assert.equal(buildProfileArgs("file:///w/m.py", 4, undefined, on).memory, true);
    assert.equal(buildProfileArgs("file:///w/m.py", 4, undefined, DEFAULT_SETTINGS).memory, undefined);
    assert.equal(buildProfileArgs("file:///w/m.py", 4, undefined, DEFAULT_SETTINGS, true).memory, true);
  });

  it("sends prestart, env and the resolved env file (issue 53)", () => {
    const s = resolveSettings(config({ prestart: "off", env: { CUDA_VISIBLE_DEVICES: "1", N: 2, BAD: { x: 1 } } }));
    const sent = serverSettings(s, undefined, "/w/.env");
    assert.equal(sent.prestart, "off");
    assert.deepEqual(sent.env, { CUDA_VISIBLE_DEVICES: "1", N: "2" });
    assert.equal(sent.env_file, "/w/.env");
    assert.equal(resolveSettings(config({ prestart: "sometimes" })).prestart, "auto");
    assert.deepEqual(envMap(["A=1"]), {});
    assert.deepEqual(envMap(null), {});
  });

  it("takes torchscope.envFile, else the Python extension's python.envFile, expanded", () => {
    assert.equal(workerEnvFile("", "${workspaceFolder}/.env", "/w"), "/w/.env");
    assert.equal(workerEnvFile("~/gpu.env", "${workspaceFolder}/.env", "/w", "/home/u"), "/home/u/gpu.env");
    assert.equal(workerEnvFile("", undefined, "/w"), ""); // no Python extension: none
    assert.equal(workerEnvFile("", "${workspaceFolder}/.env", undefined), ""); // no folder open
    assert.equal(resolveSettings(config({ envFile: " ${workspaceFolder}/a.env " })).envFile, "${workspaceFolder}/a.env");
  });

  it("notifies the server when python.envFile changes", () => {
    assert.equal(needsNotify(change("python.envFile")), true);
    assert.equal(needsNotify(change("torchscope.env")), true);
  });

  it("restarts only for the interpreter, notifies for the rest", () => {
    assert.equal(needsRestart(change("torchscope.pythonPath")), true);
    assert.equal(needsNotify(change("torchscope.pythonPath")), false);
    assert.equal(needsRestart(change("torchscope.steps")), false);
    assert.equal(needsNotify(change("torchscope.steps")), true);
    assert.equal(needsNotify(change("editor.fontSize")), false);
  });
});
