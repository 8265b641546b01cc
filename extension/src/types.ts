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
  /** Record allocations per line (the memory pass). */
  memory?: boolean;
}

/** Result of `torchscope.profile` and `torchscope.analyzeTrace`. */
export type CommandResult =
  | { ok: true; report: Record<string, unknown> }
  | { ok: false; error: string };
