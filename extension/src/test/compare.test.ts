import * as assert from "node:assert/strict";
import {
  compareRows,
  compareSummary,
  escapeHtml,
  formatBytes,
  formatDuration,
  generatedCodePaths,
  isCompileMode,
  parseCompare,
  renderCompareHtml,
} from "../compare";

const report = {
  verdict: { id: "overhead-bound", headline: "overhead-bound (CPU): 9.0 µs per call" },
  compare: {
    mode: "default",
    eager: { median_us: 9.0, cpu_us: 20, device_us: 0, launches: 0, copies: [], op_count: 6, cold_us: 900 },
    compiled: {
      median_us: 30.3,
      cpu_us: 61,
      device_us: 0,
      launches: 0,
      copies: [{ kind: "cpu", op: "aten::copy_", within: "aten::addmm", calls: 1, bytes: 16384 }],
      op_count: 5,
      cold_us: 3.2e6,
      compile_s: 3.2,
      graphs: [
        { hash: "fd447jib", code_path: "/tmp/torchinductor_u/yi/cyic.py" },
        { hash: "gone", code_path: null },
      ],
    },
    changes: { summary: "aten::matmul + aten::mm + aten::add → aten::addmm + aten::copy_" },
    verdict: { id: "keep-eager", headline: "torch.compile: 3.4× slower per call (9.0 µs → 30 µs), adds a 16.0 KiB bias copy; keep eager" },
    findings: [{ rule: "hidden-copy", message: "torch.compile adds a <16 KiB> copy" }, { bad: 1 }],
    error: null,
  },
};

describe("torch.compile comparison", () => {
  it("reads the compare object defensively", () => {
    const c = parseCompare(report);
    assert.ok(c !== undefined);
    assert.equal(c.verdict?.id, "keep-eager");
    assert.equal(c.findings.length, 1);
    assert.deepEqual(generatedCodePaths(c), ["/tmp/torchinductor_u/yi/cyic.py"]);
    assert.equal(parseCompare({ verdict: {} }), undefined);
    assert.equal(parseCompare(null), undefined);
    assert.equal(parseCompare({ compare: { eager: "x" } }), undefined);
  });

  it("summarises the verdict, or the compile failure", () => {
    const c = parseCompare(report);
    assert.ok(c !== undefined);
    assert.deepEqual(compareSummary(c), { text: report.compare.verdict.headline, failed: false });
    const failed = parseCompare({
      compare: {
        eager: report.compare.eager,
        compiled: null,
        verdict: null,
        error: { kind: "compile-failed", message: "torch.compile failed: InvalidCxxCompiler: No working C++ compiler\nmore" },
      },
    });
    assert.ok(failed !== undefined);
    assert.deepEqual(compareSummary(failed), {
      text: "torch.compile failed: InvalidCxxCompiler: No working C++ compiler — the eager profile is shown",
      failed: true,
    });
    assert.deepEqual(compareRows(failed), []);
    assert.match(renderCompareHtml("fn", failed), /<pre>torch.compile failed: InvalidCxxCompiler: No working C\+\+ compiler\nmore<\/pre>/);
  });

  it("builds the table side by side", () => {
    const c = parseCompare(report);
    assert.ok(c !== undefined);
    const rows = compareRows(c);
    assert.deepEqual(rows[0], ["time per call (unprofiled median)", "9.0 µs", "30 µs"]);
    assert.deepEqual(rows[4], ["copies per call", "none", "1× 16.0 KiB cpu in aten::addmm"]);
    assert.deepEqual(rows[6], ["first call", "900 µs", "3.20 s (compile)"]);
  });

  it("escapes everything it renders", () => {
    const c = parseCompare(report);
    assert.ok(c !== undefined);
    const html = renderCompareHtml("Model<T>.forward", c);
    assert.match(html, /Model&lt;T&gt;\.forward: eager vs torch\.compile \(mode=default\)/);
    assert.match(html, /&lt;16 KiB&gt;/);
    assert.match(html, /## Call CompiledFxGraph fd447jib ##<\/code> → <code>\/tmp\/torchinductor_u\/yi\/cyic\.py/);
    assert.doesNotMatch(html, /<16 KiB>/);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  });

  it("formats like the server", () => {
    assert.equal(formatDuration(2.74), "2.7 µs");
    assert.equal(formatDuration(9.99), "10 µs");
    assert.equal(formatDuration(999.7), "1.0 ms");
    assert.equal(formatDuration(147_000), "147 ms");
    assert.equal(formatDuration(1_200_000), "1.20 s");
    assert.equal(formatDuration(null), "—");
    assert.equal(formatBytes(704), "704 B");
    assert.equal(formatBytes(64 * 1024 * 1024), "64.0 MiB");
  });

  it("knows the modes", () => {
    assert.ok(isCompileMode("reduce-overhead"));
    assert.ok(!isCompileMode("fastest"));
    assert.ok(!isCompileMode(undefined));
  });
});
