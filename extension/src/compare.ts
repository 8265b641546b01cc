/**
 * The torch.compile comparison as the client shows it (pure logic, no `vscode` import): the
 * `compare` object of the server's report (see docs/compile-and-sweeps.md, `--compare-compile --json`) read
 * defensively, a one-line summary for the notification, and a small HTML table for the panel.
 */

/** `torch.compile` modes offered by **Compare with torch.compile**. */
export const COMPILE_MODES = ["default", "reduce-overhead", "max-autotune-no-cudagraphs"] as const;
export type CompileMode = (typeof COMPILE_MODES)[number];

export function isCompileMode(value: unknown): value is CompileMode {
  return typeof value === "string" && (COMPILE_MODES as readonly string[]).includes(value);
}

export interface CompareCopy {
  kind: string;
  op: string;
  within: string | null;
  calls: number;
  bytes: number;
}

export interface CompareSide {
  median_us: number | null;
  min_us?: number | null;
  max_us?: number | null;
  cold_us?: number | null;
  cpu_us: number | null;
  device_us: number | null;
  launches: number;
  copies: CompareCopy[];
  op_count: number;
  trace_path?: string;
  compile_s?: number | null;
  graphs?: { hash: string; code_path: string | null }[];
  recompiles?: number;
}

export interface CompareInfo {
  mode: string;
  eager: CompareSide;
  compiled: CompareSide | null;
  changes: { summary?: string } | null;
  verdict: { id: string; headline: string } | null;
  findings: { rule: string; message: string }[];
  error: { kind: string; message: string } | null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

/** The `compare` object of a report, when it has the expected shape. */
export function parseCompare(report: unknown): CompareInfo | undefined {
  const c = isRecord(report) ? report.compare : undefined;
  if (!isRecord(c) || !isRecord(c.eager)) {
    return undefined;
  }
  const verdict = isRecord(c.verdict) && typeof c.verdict.id === "string" && typeof c.verdict.headline === "string" ? { id: c.verdict.id, headline: c.verdict.headline } : null;
  const error = isRecord(c.error) && typeof c.error.message === "string" ? { kind: typeof c.error.kind === "string" ? c.error.kind : "compile-failed", message: c.error.message } : null;
  const findings = Array.isArray(c.findings)
    ? c.findings.filter((f): f is { rule: string; message: string } => isRecord(f) && typeof f.rule === "string" && typeof f.message === "string")
    : [];
  return {
    mode: typeof c.mode === "string" ? c.mode : "default",
    eager: c.eager as unknown as CompareSide,
    compiled: isRecord(c.compiled) ? (c.compiled as unknown as CompareSide) : null,
    changes: isRecord(c.changes) ? { summary: typeof c.changes.summary === "string" ? c.changes.summary : undefined } : null,
    verdict,
    findings,
    error,
  };
}

/** Paths of the generated code of each compiled graph that was found on disk. */
export function generatedCodePaths(compare: CompareInfo): string[] {
  return (compare.compiled?.graphs ?? []).map((g) => g.code_path).filter((p): p is string => typeof p === "string" && p !== "");
}

/** The notification's text: the verdict headline, or the compile failure's first line. */
export function compareSummary(compare: CompareInfo): { text: string; failed: boolean } {
  if (compare.verdict !== null) {
    return { text: compare.verdict.headline, failed: false };
  }
  const first = (compare.error?.message ?? "torch.compile failed").trim().split("\n")[0] ?? "";
  return { text: `${first} — the eager profile is shown`, failed: true };
}

/** The same units as the server: `2.7 µs`, `23 µs`, `2.3 ms`, `1.20 s`; `—` for none. */
export function formatDuration(us: number | null | undefined): string {
  if (typeof us !== "number" || !Number.isFinite(us)) {
    return "—";
  }
  if (us < 0) {
    return `-${formatDuration(-us)}`;
  }
  if (Math.round(us * 10) / 10 < 10) {
    return `${us.toFixed(1)} µs`;
  }
  if (Math.round(us) < 1000) {
    return `${us.toFixed(0)} µs`;
  }
  const ms = us / 1000;
  if (Math.round(ms * 10) / 10 < 100) {
    return `${ms.toFixed(1)} ms`;
  }
  if (Math.round(ms) < 1000) {
    return `${ms.toFixed(0)} ms`;
  }
  const s = ms / 1000;
  return s < 10 ? `${s.toFixed(2)} s` : `${s.toFixed(1)} s`;
}

export function formatShare(share: number | null | undefined): string {
  return typeof share === "number" && Number.isFinite(share) ? `${(share * 100).toFixed(0)} %` : "—";
}

export function formatBytes(n: number): string {
  let value = n;
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (Math.abs(value) < 1024 || unit === "GiB") {
      return unit === "B" ? `${value.toFixed(0)} B` : `${value.toFixed(1)} ${unit}`;
    }
    value /= 1024;
  }
  return `${value.toFixed(1)} GiB`;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

function copiesCell(side: CompareSide): string {
  if (side.copies.length === 0) {
    return "none";
  }
  return side.copies.map((c) => `${c.calls}× ${formatBytes(c.bytes)} ${c.kind}${c.within !== null ? ` in ${c.within}` : ""}`).join("; ");
}

/** The comparison table rows: label, eager, compiled (already formatted). */
export function compareRows(compare: CompareInfo): [string, string, string][] {
  const e = compare.eager;
  const c = compare.compiled;
  if (c === null) {
    return [];
  }
  return [
    ["time per call (unprofiled median)", formatDuration(e.median_us), formatDuration(c.median_us)],
    ["CPU op time per call (profiled)", formatDuration(e.cpu_us), formatDuration(c.cpu_us)],
    ["device time per call", formatDuration(e.device_us), formatDuration(c.device_us)],
    ["kernel launches per call", String(e.launches), String(c.launches)],
    ["copies per call", copiesCell(e), copiesCell(c)],
    ["ops per call", String(e.op_count), String(c.op_count)],
    ["first call", formatDuration(e.cold_us), `${formatDuration(c.cold_us)} (compile)`],
  ];
}

/** The body of the comparison panel (a webview; the page's CSP allows no scripts). */
export function renderCompareHtml(qualname: string, compare: CompareInfo): string {
  const parts = [`<h2>${escapeHtml(qualname)}: eager vs torch.compile (mode=${escapeHtml(compare.mode)})</h2>`];
  const summary = compareSummary(compare);
  parts.push(`<p class="${summary.failed ? "err" : "verdict"}">${escapeHtml(summary.text)}</p>`);
  if (compare.compiled === null) {
    parts.push(`<pre>${escapeHtml(compare.error?.message ?? "")}</pre>`);
    return parts.join("\n");
  }
  const rows = compareRows(compare)
    .map(([label, e, c]) => `<tr><td>${escapeHtml(label)}</td><td class="num">${escapeHtml(e)}</td><td class="num">${escapeHtml(c)}</td></tr>`)
    .join("");
  parts.push(`<table><thead><tr><th></th><th>eager</th><th>torch.compile</th></tr></thead><tbody>${rows}</tbody></table>`);
  const changed = compare.changes?.summary;
  if (typeof changed === "string" && changed !== "") {
    parts.push(`<p>Ops changed: <code>${escapeHtml(changed)}</code></p>`);
  }
  if (compare.findings.length > 0) {
    parts.push(`<ul>${compare.findings.map((f) => `<li><code>${escapeHtml(f.rule)}</code>: ${escapeHtml(f.message)}</li>`).join("")}</ul>`);
  }
  for (const g of compare.compiled.graphs ?? []) {
    parts.push(`<p class="path"><code>## Call CompiledFxGraph ${escapeHtml(g.hash)} ##</code> → <code>${escapeHtml(g.code_path ?? "generated code not found")}</code></p>`);
  }
  return parts.join("\n");
}
