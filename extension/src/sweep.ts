/**
 * Profile across sizes (pure logic, no `vscode` import): the sizes the user types, the call
 * template with its `{N}` placeholder, the notification's summary and the chart's embedding.
 */
import type { SweepInfo, SweepPointInfo, SweepStepInfo } from "./types";

/** Sizes offered in the input box: the example, small enough for a laptop CPU. */
export const DEFAULT_SIZES = "16,64,256,1024";

/** At most this many sizes (the server refuses more). */
export const MAX_SIZES = 32;

/** The placeholder's name; the call holds `{N}`. */
export const SIZE_NAME = "N";

export function placeholder(name: string = SIZE_NAME): string {
  return `{${name}}`;
}

/** `"64, 256,1024"` → `[64, 256, 1024]` (sorted, duplicates dropped), or an error message. */
export function parseSizes(text: string): number[] | string {
  const parts = text
    .split(/[,\s]+/)
    .map((p) => p.trim())
    .filter((p) => p !== "");
  if (parts.length === 0) {
    return "Enter sizes separated by commas, e.g. 16,64,256,1024";
  }
  const sizes = new Set<number>();
  for (const p of parts) {
    if (!/^\d+$/.test(p) || Number(p) < 1 || !Number.isSafeInteger(Number(p))) {
      return `${p} is not a positive whole number`;
    }
    sizes.add(Number(p));
  }
  if (sizes.size > MAX_SIZES) {
    return `At most ${MAX_SIZES} sizes`;
  }
  return [...sizes].sort((a, b) => a - b);
}

/** Input-box validation for the sizes: undefined when acceptable. */
export function validateSizes(text: string): string | undefined {
  const parsed = parseSizes(text);
  return typeof parsed === "string" ? parsed : undefined;
}

/**
 * A template from a concrete call: its most frequent integer literal (ties: the larger) becomes
 * the placeholder. `fn(torch.randn(8, 8), w)` → `fn(torch.randn({N}, {N}), w)`. Undefined when
 * the call has no integer literal or already holds the placeholder.
 */
export function suggestSweepCall(call: string, name: string = SIZE_NAME): string | undefined {
  if (call.includes(placeholder(name))) {
    return call;
  }
  const literal = /(?<![\w.])(\d+)(?![\w.])/g;
  const counts = new Map<string, number>();
  for (const m of call.matchAll(literal)) {
    const value = m[1];
    counts.set(value, (counts.get(value) ?? 0) + 1);
  }
  let best: string | undefined;
  for (const [value, count] of counts) {
    const bestCount = best === undefined ? -1 : (counts.get(best) ?? 0);
    if (count > bestCount || (count === bestCount && best !== undefined && Number(value) > Number(best))) {
      best = value;
    }
  }
  if (best === undefined) {
    return undefined;
  }
  const chosen = best;
  return call.replace(literal, (whole, value: string) => (value === chosen ? placeholder(name) : whole));
}

/** Input-box validation for the template: it must hold the placeholder. */
export function validateSweepCall(text: string, name: string = SIZE_NAME): string | undefined {
  const t = text.trim();
  if (t === "") {
    return `Enter a call with ${placeholder(name)} where the size goes, e.g. fn(torch.randn(${placeholder(name)}, ${placeholder(name)}))`;
  }
  if (!t.includes(placeholder(name))) {
    return `Put ${placeholder(name)} where the size goes, e.g. torch.randn(${placeholder(name)}, ${placeholder(name)})`;
  }
  if (!t.endsWith(")") || !t.includes("(")) {
    return "A call expression ends with the call, e.g. fn(x, w, b)";
  }
  return undefined;
}

export type { SweepInfo, SweepPointInfo, SweepStepInfo } from "./types";

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

/** The `sweep` object of a `torchscope.sweep` result, if it has the expected shape. */
export function parseSweep(value: unknown): SweepInfo | undefined {
  if (!isRecord(value) || !Array.isArray(value.points) || typeof value.call !== "string") {
    return undefined;
  }
  const points = value.points
    .filter((p): p is SweepPointInfo => isRecord(p) && typeof p.N === "number")
    .map((p) => ({ ...p, stable: (p as { stable?: unknown }).stable !== false }));
  return {
    name: typeof value.name === "string" ? value.name : SIZE_NAME,
    call: value.call,
    points,
    crossover: typeof value.crossover === "number" ? value.crossover : null,
    chart_path: typeof value.chart_path === "string" ? value.chart_path : null,
    steps: Array.isArray(value.steps) ? value.steps.filter((s): s is SweepStepInfo => isRecord(s) && typeof s.from === "number" && isRecord(s.comparison)) : [],
  };
}

/** The row verdicts on the overhead side of the crossover (analysis/multi/sweep.py). */
const OVERHEAD_VERDICTS = ["overhead-bound"];

/**
 * One line for the notification: where the function stops being overhead-bound, read off the
 * rows' own verdicts as the server's crossover line is (report/sweep.py: crossover_text).
 */
export function sweepSummary(sweep: SweepInfo): string {
  const line = crossoverLine(sweep);
  const unstable = sweep.points.filter((p) => (p.error === null || p.error === undefined) && !p.stable).length;
  return unstable > 0 ? `${line} (${unstable} unstable ${unstable === 1 ? "row" : "rows"} left out)` : line;
}

/** The crossover from the stable rows only, as the server reads it (issue 54). */
function crossoverLine(sweep: SweepInfo): string {
  const ok = sweep.points.filter((p) => (p.error === null || p.error === undefined) && p.stable);
  const past = (p: SweepPointInfo): boolean => !OVERHEAD_VERDICTS.includes(p.verdict);
  if (sweep.crossover !== null) {
    const at = ok.find((p) => p.N === sweep.crossover);
    return `${at?.verdict ?? "compute-bound"} from ${sweep.name}=${sweep.crossover}`;
  }
  if (ok.length > 0 && ok.every(past)) {
    return `not overhead-bound at any size (from ${sweep.name}=${ok[0]?.N ?? "?"})`;
  }
  if (ok.length === 0) {
    return sweep.points.some((p) => p.error === null || p.error === undefined) ? "no stable size to read a crossover from" : "no size could be profiled";
  }
  const last = ok[ok.length - 1];
  return past(last)
    ? `the verdicts go back and forth up to ${sweep.name}=${last.N}`
    : `still overhead-bound at ${sweep.name}=${last.N}: try larger sizes`;
}

/**
 * The chart for the sweep page (below the server's table, `markdown` of the `torchscope.sweep`
 * result): `svg` is the chart file's text, written by torchscope itself; it is embedded only
 * when it is plain SVG (no script, no foreign content), else nothing is.
 */
export function chartHtml(svg: string | undefined): string {
  return svg !== undefined && isSafeSvg(svg) ? `<div class="chart">${stripXmlDeclaration(svg)}</div>` : "";
}

/** True for SVG text with no scripts, event handlers, foreign objects or external references. */
export function isSafeSvg(svg: string): boolean {
  const lower = svg.toLowerCase();
  return (
    lower.includes("<svg") &&
    !lower.includes("<script") &&
    !lower.includes("<foreignobject") &&
    !/\son[a-z]+\s*=/.test(lower) &&
    !/(xlink:)?href\s*=/.test(lower)
  );
}

function stripXmlDeclaration(svg: string): string {
  return svg.replace(/^<\?xml[^>]*\?>\s*/, "");
}

/**
 * The template to prefill: a directive that already holds the placeholder, else the template
 * used last time for this function, else one suggested from the directive or the remembered
 * call, else `fallback` (the signature's template, for the user to complete).
 */
export function initialSweepCall(
  directive: string | null,
  rememberedSweep: string | undefined,
  rememberedCall: string | undefined,
  fallback: string,
  name: string = SIZE_NAME,
): string {
  if (directive?.includes(placeholder(name)) === true) {
    return directive;
  }
  if (rememberedSweep !== undefined && rememberedSweep.trim() !== "") {
    return rememberedSweep.trim();
  }
  for (const call of [directive, rememberedCall]) {
    const suggested = call !== null && call !== undefined ? suggestSweepCall(call, name) : undefined;
    if (suggested !== undefined) {
      return suggested;
    }
  }
  return fallback;
}
