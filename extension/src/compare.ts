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
  /** The A/B engine's decision (issue 54): the same as the CLI's, MCP's and the notebook's. */
  comparison: { decision: string; stable: boolean; reason: string; phrase: string } | null;
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
  const a = c.comparison;
  const comparison =
    isRecord(a) && typeof a.decision === "string"
      ? {
          decision: a.decision,
          stable: a.stable !== false,
          reason: typeof a.reason === "string" ? a.reason : "",
          phrase: typeof a.phrase === "string" ? a.phrase : "",
        }
      : null;
  return {
    mode: typeof c.mode === "string" ? c.mode : "default",
    eager: c.eager as unknown as CompareSide,
    compiled: isRecord(c.compiled) ? (c.compiled as unknown as CompareSide) : null,
    changes: isRecord(c.changes) ? { summary: typeof c.changes.summary === "string" ? c.changes.summary : undefined } : null,
    verdict,
    findings,
    error,
    comparison,
  };
}

/** The notification's text: the verdict headline (an unstable or inconclusive comparison's
 * reason is in it, as the server words it), or the compile failure's first line. `undecided`:
 * the A/B engine could not decide, or a side's timing was unstable. */
export function compareSummary(compare: CompareInfo): { text: string; failed: boolean; undecided: boolean } {
  const c = compare.comparison;
  const undecided = c !== null && (c.decision === "inconclusive" || !c.stable);
  if (compare.verdict !== null) {
    return { text: compare.verdict.headline, failed: false, undecided };
  }
  const first = (compare.error?.message ?? "torch.compile failed").trim().split("\n")[0] ?? "";
  return { text: `${first} — the eager profile is shown`, failed: true, undecided: false };
}
