import * as assert from "node:assert/strict";
import {
  chartHtml,
  DEFAULT_SIZES,
  initialSweepCall,
  isSafeSvg,
  parseSizes,
  parseSweep,
  suggestSweepCall,
  sweepSummary,
  validateSizes,
  validateSweepCall,
} from "../sweep";

const sweep = {
  name: "N",
  call: "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}, {N}))",
  points: [
    { N: 16, median_us: 3.3, cpu_us: 8.6, device_us: 0, compute_share: 0.29, compute_us: 0.9, verdict: "overhead-bound", error: null },
    { N: 64, median_us: 9.6, cpu_us: 13, device_us: 0, compute_share: 0.76, compute_us: 7.3, verdict: "compute-bound", error: null },
    { N: 4096, median_us: null, cpu_us: null, device_us: null, compute_share: null, verdict: "failed", error: "the job <timed out>" },
  ],
  crossover: 64,
  chart_path: "/traces/fn.sweep.svg",
};

describe("profile across sizes", () => {
  it("parses sizes", () => {
    assert.deepEqual(parseSizes(DEFAULT_SIZES), [16, 64, 256, 1024]);
    assert.deepEqual(parseSizes(" 1024, 64 64 ,8"), [8, 64, 1024]);
    assert.equal(typeof parseSizes(""), "string");
    assert.equal(parseSizes("8,0"), "0 is not a positive whole number");
    assert.equal(parseSizes("8,1.5"), "1.5 is not a positive whole number");
    assert.equal(validateSizes("8,x"), "x is not a positive whole number");
    assert.equal(validateSizes("8,16"), undefined);
    assert.equal(typeof parseSizes(Array.from({ length: 40 }, (_, i) => i + 1).join(",")), "string");
  });

  it("suggests a template from a concrete call", () => {
    assert.equal(
      suggestSweepCall("fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8))"),
      "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}))",
    );
    assert.equal(suggestSweepCall("g(torch.randn(3, 64, 64), scale=0.5, k=x2)"), "g(torch.randn(3, {N}, {N}), scale=0.5, k=x2)");
    assert.equal(suggestSweepCall("g(torch.randn(3, 64))"), "g(torch.randn(3, {N}))"); // a tie: the larger
    assert.equal(suggestSweepCall("g(x)"), undefined);
    assert.equal(suggestSweepCall("g({N})"), "g({N})");
  });

  it("prefills the directive with the placeholder, then the last template, then a suggestion", () => {
    assert.equal(initialSweepCall("fn(t({N}))", "fn(old({N}))", "fn(t(8))", "fn(x=…)"), "fn(t({N}))");
    assert.equal(initialSweepCall("fn(t(8))", "fn(old({N}))", undefined, "fn(x=…)"), "fn(old({N}))");
    assert.equal(initialSweepCall("fn(t(8))", undefined, undefined, "fn(x=…)"), "fn(t({N}))");
    assert.equal(initialSweepCall(null, undefined, "fn(t(32, 32))", "fn(x=…)"), "fn(t({N}, {N}))");
    assert.equal(initialSweepCall(null, undefined, undefined, "fn(x=…)"), "fn(x=…)");
  });

  it("validates the template", () => {
    assert.match(validateSweepCall("fn(torch.randn(8))") ?? "", /Put \{N\} where the size goes/);
    assert.equal(validateSweepCall("fn(torch.randn({N}))"), undefined);
    assert.match(validateSweepCall("  ") ?? "", /Enter a call/);
  });

  it("reads and summarises the server's sweep", () => {
    const parsed = parseSweep(sweep);
    assert.ok(parsed !== undefined);
    assert.equal(sweepSummary(parsed), "compute-bound from N=64");
    const [small, medium] = parsed.points;
    assert.equal(sweepSummary({ ...parsed, crossover: null, points: [medium] }), "not overhead-bound at any size (from N=64)");
    assert.equal(sweepSummary({ ...parsed, crossover: null, points: [small] }), "still overhead-bound at N=16: try larger sizes");
    // issue 40: the rows' verdicts decide, not the compute share (over 50 % while overhead-bound)
    const busy = { ...small, compute_share: 0.9 };
    assert.equal(sweepSummary({ ...parsed, crossover: null, points: [busy] }), "still overhead-bound at N=16: try larger sizes");
    assert.equal(parseSweep({ points: "x" }), undefined);
    // issue 54: an unstable row is left out of the crossover, and the summary says so
    const shaky = { ...small, verdict: "compute-bound", stable: false, unstable_reason: "unstable: …" };
    assert.equal(sweepSummary({ ...parsed, crossover: null, points: [shaky] }), "no stable size to read a crossover from (1 unstable row left out)");
    assert.deepEqual(parsed.steps, []);
  });

  it("embeds only safe SVG", () => {
    const parsed = parseSweep(sweep);
    assert.ok(parsed !== undefined);
    const svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><circle class="point"/></svg>';
    const html = chartHtml(svg);
    assert.match(html, /^<div class="chart"><svg xmlns/);
    assert.doesNotMatch(html, /<\?xml/);
    assert.equal(chartHtml('<svg onload="alert(1)"></svg>'), "");
    assert.equal(chartHtml(undefined), "");
    assert.ok(!isSafeSvg('<svg><script>alert(1)</script></svg>'));
    assert.ok(!isSafeSvg('<svg><a href="https://x">x</a></svg>'));
    assert.ok(isSafeSvg('<svg><title>overhead-bound ↓ N=16</title></svg>'));
  });
});
