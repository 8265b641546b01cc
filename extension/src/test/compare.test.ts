import * as assert from "node:assert/strict";
import { compareSummary, isCompileMode, parseCompare } from "../compare";
import { escapeHtml } from "../html";

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
    assert.equal(parseCompare({ verdict: {} }), undefined);
    assert.equal(parseCompare(null), undefined);
    assert.equal(parseCompare({ compare: { eager: "x" } }), undefined);
  });

  it("summarises the verdict, or the compile failure", () => {
    const c = parseCompare(report);
    assert.ok(c !== undefined);
    assert.deepEqual(compareSummary(c), { text: report.compare.verdict.headline, failed: false, undecided: false });
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
      undecided: false,
    });
  });

  it("shows the A/B engine's decision, and says when it could not decide", () => {
    const comparison = { decision: "inconclusive", stable: false, reason: "inconclusive: …; machine 62 % busy", phrase: "1.08× the time (0.90×–1.30×)" };
    const c = parseCompare({ compare: { ...report.compare, comparison } });
    assert.ok(c !== undefined);
    assert.deepEqual(c.comparison, comparison);
    assert.equal(compareSummary(c).undecided, true);
    assert.equal(parseCompare(report)?.comparison, null);
  });

  it("escapes HTML", () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  });

  it("knows the modes", () => {
    assert.ok(isCompileMode("reduce-overhead"));
    assert.ok(!isCompileMode("fastest"));
    assert.ok(!isCompileMode(undefined));
  });
});
