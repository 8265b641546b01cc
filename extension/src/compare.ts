/**
 * The torch.compile comparison as the client reads it (pure logic, no `vscode` import): the
 * `compare` object of the server's report (see docs/compile-and-sweeps.md, `--compare-compile --json`) read
 * defensively, and a one-line summary for the notification. The panel's page is the server's:
 * the command's `markdown` (report/compare.py), shown as it is.
 */

import { COMPILE_MODES } from "./constants";

/** `torch.compile` modes offered by **Compare with torch.compile** (defined in constants.ts). */
export { COMPILE_MODES };
import type { CompareSide } from "./types";

export type CompileMode = (typeof COMPILE_MODES)[number];

export function isCompileMode(value: unknown): value is CompileMode {
  return typeof value === "string" && (COMPILE_MODES as readonly string[]).includes(value);
}

export type { CompareCopy, CompareSide } from "./types";

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

/** The notification's text: the verdict headline, or the compile failure's first line. */
export function compareSummary(compare: CompareInfo): { text: string; failed: boolean } {
  if (compare.verdict !== null) {
    return { text: compare.verdict.headline, failed: false };
  }
  const first = (compare.error?.message ?? "torch.compile failed").trim().split("\n")[0] ?? "";
  return { text: `${first} — the eager profile is shown`, failed: true };
}
