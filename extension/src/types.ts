/** Shapes exchanged with the language server (see constants.ts for the method names). */

export type ParamKind = "positional" | "keyword" | "var_positional" | "var_keyword" | "positional_only";

export interface ParamInfo {
  name: string;
  kind: ParamKind;
  has_default: boolean;
}

/** Result of `torchscope/target`. */
export interface TargetInfo {
  /** Qualified name, e.g. `fn` or `Model.forward`. */
  qualname: string;
  /** 0-based line of the `def`. */
  line: number;
  params: ParamInfo[];
  /** Call expression from a `# torchscope:` comment above the def, if any. */
  directive: string | null;
  /** True when the function has required parameters (so a call expression is needed). */
  needs_call: boolean;
  /** True for methods (the server knows `self`/`cls` binding); derived from `qualname` when absent. */
  is_method?: boolean;
}

/** Argument object of `torchscope.profile`. */
export interface ProfileArgs {
  uri: string;
  line: number;
  call?: string;
  steps?: number;
  warmup?: number;
  timeout_s?: number;
  max_memory?: string;
  /** Record allocations per line (the memory pass). */
  memory?: boolean;
}

/** Result of the server's commands (`torchscope.profile`, `torchscope.compareCompile`, …);
 * `markdown` is the result rendered by the server for a panel (the comparison, the sweep). */
export type CommandResult =
  | { ok: true; report: Record<string, unknown>; markdown?: string }
  | { ok: false; error: string };

/*
 * Results: the JSON the server sends (`profile --json`, `report.compare`, `sweep`), one
 * interface per Python dataclass that reaches the JSON. tests/unit/test_types_mirror.py holds
 * the field names equal to the Python model's (analysis/results.py,
 * analysis/multi/comparison.py, analysis/multi/sweep.py): change both together.
 */

/** analysis.results.Device */
export interface Device {
  kind: string;
  name: string;
}

/** analysis.results.Verdict */
export interface Verdict {
  id: string;
  headline: string;
  cpu_us: number | null;
  device_us: number | null;
  overhead_share: number | null;
  basis: string;
  /** achieved / peak (0-1) of the dominant op, when its FLOPs or bytes are known */
  efficiency?: number | null;
  /** the cause the headline names: dispatch, threads, page-faults, rng, bandwidth, compute, sync, input or comm ("" when nothing ran) */
  cause?: string;
  /** every measured cause with its cost, costliest first */
  causes?: Cause[];
  /** set when the deciding figure is within the steps' spread of its threshold */
  borderline?: Borderline | null;
  /** false when the timing behind it cannot be trusted (the passes disagreed, or spread too wide) */
  stable?: boolean;
  /** when not stable: why and what to do, one line */
  unstable_reason?: string;
}

/** analysis.results.Cause */
export interface Cause {
  cause: string;
  us_per_call: number | null;
  share: number | null;
  /** On an idle GPU: the device's own work, ranked after the causes of the idle time. */
  hidden: boolean;
}

/** analysis.results.Borderline */
export interface Borderline {
  runner_up: string;
  /** deciding figure − threshold */
  margin: number;
  steps: number;
  of: number;
}

/** analysis.results.Timing */
export interface Timing {
  cold_us: number | null;
  min_us: number | null;
  median_us: number | null;
  max_us: number | null;
  calls: number;
  /** median µs per call waiting for a CPU another process held (null: not measured) */
  wait_us: number | null;
  /** timing samples behind these numbers */
  samples?: number;
  /** interquartile range over median of the samples */
  spread?: number | null;
}

/** analysis.results.Finding */
export interface Finding {
  rule: string;
  severity: string;
  message: string;
  cost_us: number | null;
  line: number | null;
  file: string | null;
  title: string;
  docs: string;
  step: string | null;
  details: Record<string, unknown>;
  /** Absent (or null) when no measured fix applies; see FixOffer. */
  fix?: FixOffer | null;
  /** The rank it is about, in a multi-process report. */
  rank?: number;
}

/** analysis.results.FixOffer: `rule` is the fix id (`torchscope fix --try RULE`). */
export interface FixOffer {
  rule: string;
  title: string;
  /** null until the fix was tried; then FixTrial.measured(). */
  measured: Record<string, unknown> | null;
}

/** analysis.multi.comparison.CopyRow */
export interface CompareCopy {
  kind: string;
  op: string;
  within: string | null;
  calls: number;
  bytes: number;
  time_us: number;
}

/** analysis.multi.comparison.OpRow */
export interface CompareOp {
  name: string;
  calls: number;
  self_cpu_us: number;
  within: string | null;
}

/** analysis.multi.comparison.Graph */
export interface CompareGraph {
  hash: string;
  code_path: string | null;
}

/** analysis.multi.comparison.CompareSide; the compiled side adds the CompiledInfo fields. */
export interface CompareSide {
  median_us: number | null;
  min_us: number | null;
  max_us: number | null;
  cold_us: number | null;
  calls_timed: number;
  cpu_us: number | null;
  profiled_us: number | null;
  device_us: number | null;
  launches: number;
  copies: CompareCopy[];
  copy_count: number;
  copy_bytes: number;
  op_count: number;
  ops: CompareOp[];
  verdict: { id: string; headline: string };
  /** profile's stability checks over this side's interleaved rounds (issue 54) */
  stable: boolean;
  spread: number;
  busy_share: number | null;
  unstable_reason: string;
  /** top-level ops per call, as the steps table counts them (op_count: nested ones included) */
  top_level_ops: number;
  trace_path?: string;
  compile_s?: number | null;
  graphs?: CompareGraph[];
  recompiles?: number;
  compile_ids?: string[];
  graph_breaks?: string[];
  /** the compiled side only, with per-line times: its kernels and the lines they came from */
  kernels?: CompiledKernelInfo[];
}

/** analysis.multi.compiled_lines.CompiledKernel: one kernel of the compiled side, per call. */
export interface CompiledKernelInfo {
  name: string;
  graph: string | null;
  lines: number[];
  ops: string[];
  us: number;
  calls: number;
  extern: boolean;
}

/** analysis.multi.compiled_lines.CompiledLine: one line, eager against compiled, per call. */
export interface CompiledLineInfo {
  line: number;
  compiled_us: number;
  fused_with: number[];
  kernels: string[];
  share: number;
  eager_us?: number | null;
  graph_break?: string | null;
}

/** analysis.multi.comparison.CompareVerdict */
export interface CompareVerdict {
  id: string;
  headline: string;
  ratio: number | null;
  band: number;
  noise: number;
  /** the ratio's 95 % interval over the paired rounds, widened by the noise */
  ci_low: number;
  ci_high: number;
  rounds: number;
}

/** analysis.results.SideSpreads */
export interface SideSpreads {
  before: number;
  after: number;
}

/** analysis.results.ABComparison: the A/B engine's `comparison` object, the same in every command. */
export interface ABComparison {
  /** faster | slower | no-difference | inconclusive (B against A) */
  decision: string;
  ratio: number | null;
  interval: (number | null)[];
  band: number;
  rounds: number;
  dropped_rounds: number;
  spread: SideSpreads;
  busy_share: number | null;
  stable: boolean;
  reason: string;
  /** the ratio and its interval in one direction: "2.3× slower (1.1×–3.3× slower)" */
  phrase: string;
  added_rounds: number;
  noise: number;
}

/** analysis.multi.comparison.CompareError */
export interface CompareError {
  kind: string;
  message: string;
}

/** analysis.multi.comparison.OpChange */
export interface OpChange {
  name: string;
  eager: number;
  compiled: number;
}

/** analysis.multi.comparison.OpChanges */
export interface OpChanges {
  removed: OpChange[];
  added: OpChange[];
  summary: string;
}

/** analysis.multi.comparison.Comparison: the `compare` object of a report. */
export interface Comparison {
  mode: string;
  eager: CompareSide;
  compiled: CompareSide | null;
  changes: OpChanges | null;
  verdict: CompareVerdict | null;
  findings: Finding[];
  error: CompareError | null;
  graph_breaks?: string[];
  /** per line, eager against compiled (Inductor's kernel provenance); absent without it */
  lines?: CompiledLineInfo[];
  /** why there are no per-line compiled times ('' when there are) */
  lines_note?: string;
  /** the A/B engine's decision, compiled against eager */
  comparison: ABComparison | null;
}

/** analysis.multi.sweep.SweepPoint: one point of the `sweep` object (the size under `N`). */
export interface SweepPointInfo {
  N: number;
  median_us: number | null;
  cpu_us: number | null;
  device_us: number | null;
  compute_share: number | null;
  compute_us?: number | null;
  verdict: string;
  headline?: string;
  trace_path?: string | null;
  error?: string | null;
  /** the cause the row's verdict names (dispatch, threads, page-faults …) */
  cause?: string;
  /** profile's stability checks on this size; an unstable row is left out of the crossover */
  stable: boolean;
  spread: number | null;
  busy_share: number | null;
  unstable_reason: string;
}

/** analysis.multi.sweep.SweepStep: two adjacent sizes compared by the A/B engine. */
export interface SweepStepInfo {
  from: number;
  to: number;
  comparison: ABComparison;
}

/** analysis.multi.sweep.Sweep: the `sweep` object of a `torchscope.sweep` result. */
export interface SweepInfo {
  name: string;
  call: string;
  points: SweepPointInfo[];
  crossover: number | null;
  chart_path: string | null;
  /** A sweep over a capture's batch dimension: the capture's own batch size and that dimension. */
  captured_batch?: number;
  batch_dim?: number | null;
  steps: SweepStepInfo[];
}

/** analysis.multi.rank_model.RankSummary: one row of `report.ranks` (multi-process profiles, µs per step). */
export interface RankRow {
  rank: number;
  wall_us: number;
  compute_us: number;
  comm_us: number;
  wait_us: number;
  exposed_comm_us: number;
  trace_path: string;
  /** Median per-step hidden communication; the share is all steps' hidden over all steps' communication. */
  hidden_comm_us: number;
  hidden_share: number | null;
  hidden_share_min: number | null;
  hidden_share_max: number | null;
}
