/**
 * Call expressions for functions that need arguments (pure logic, no `vscode` import).
 *
 * Where a call comes from (DESIGN.md §2): a `# torchscope:` directive above the def wins, then
 * what the user typed once in the input box (remembered per function), else we ask, prefilled
 * with a template built from the signature: `fn(x=…, w=…, b=…)`.
 */
import type { ParamInfo, TargetInfo } from "./types";
import { CALL_EXPRESSION_STATE_PREFIX } from "./constants";

/** The placeholder the user replaces in a template. */
export const PLACEHOLDER = "…";

/** Receivers a method's first parameter is bound to, skipped in templates. */
const BOUND_FIRST_PARAMS = new Set(["self", "cls"]);

/** `Class.method` → true; `fn` and `outer.<locals>.inner` → false. */
export function isMethod(qualname: string): boolean {
  const parts = qualname.split(".");
  return parts.length > 1 && parts[parts.length - 2] !== "<locals>";
}

/**
 * How the callee is spelled in a template: `fn`; `Model().forward` for a method (the receiver is
 * constructed with no arguments — the user edits it if the constructor needs some); the bare
 * name for a nested function (reachable only where it is defined).
 */
export function calleeExpression(qualname: string, method: boolean = isMethod(qualname)): string {
  const parts = qualname.split(".");
  const name = parts[parts.length - 1] ?? qualname;
  if (!method) {
    return name;
  }
  const owner = parts.slice(0, -1).filter((p) => p !== "<locals>");
  const cls = owner[owner.length - 1] ?? "";
  return `${cls}().${name}`;
}

/** The parameters a template must fill: required ones, minus the bound `self`/`cls` of a method. */
export function requiredParams(qualname: string, params: readonly ParamInfo[], method: boolean = isMethod(qualname)): ParamInfo[] {
  const out: ParamInfo[] = [];
  params.forEach((p, i) => {
    if (i === 0 && method && BOUND_FIRST_PARAMS.has(p.name) && p.kind !== "keyword") {
      return;
    }
    if (p.has_default || p.kind === "var_positional" || p.kind === "var_keyword") {
      return;
    }
    out.push(p);
  });
  return out;
}

/** `fn(x=…, w=…, b=…)`; positional-only parameters are filled by position: `fn(…, y=…)`. */
export function buildCallTemplate(target: Pick<TargetInfo, "qualname" | "params" | "is_method">): string {
  const method = target.is_method ?? isMethod(target.qualname);
  const args = requiredParams(target.qualname, target.params, method).map((p) =>
    p.kind === "positional_only" ? PLACEHOLDER : `${p.name}=${PLACEHOLDER}`,
  );
  return `${calleeExpression(target.qualname, method)}(${args.join(", ")})`;
}

/** Selection of the first placeholder in a template, for the input box: `[start, end]`. */
export function firstPlaceholderSelection(template: string): [number, number] | undefined {
  const i = template.indexOf(PLACEHOLDER);
  return i < 0 ? undefined : [i, i + PLACEHOLDER.length];
}

/** Workspace-state key of the call remembered for one function. */
export function callStateKey(documentUri: string, qualname: string): string {
  return `${CALL_EXPRESSION_STATE_PREFIX}${documentUri}#${qualname}`;
}

export type CallDecision =
  /** Send no call: the function needs no arguments, or the server reads the directive. */
  | { kind: "none"; reason: "no-arguments" | "directive" }
  /** Send the call the user gave before. */
  | { kind: "remembered"; call: string }
  /** Ask the user, prefilled with `template`. */
  | { kind: "ask"; template: string };

/** Decide where the call expression comes from (directive > remembered > ask). */
export function decideCall(target: TargetInfo, remembered: string | undefined): CallDecision {
  if (target.directive !== null && target.directive.trim() !== "") {
    return { kind: "none", reason: "directive" };
  }
  if (remembered !== undefined && remembered.trim() !== "") {
    return { kind: "remembered", call: remembered.trim() };
  }
  if (!target.needs_call) {
    return { kind: "none", reason: "no-arguments" };
  }
  return { kind: "ask", template: buildCallTemplate(target) };
}

/** Input-box validation: undefined when acceptable, else the message to show. */
export function validateCallExpression(text: string): string | undefined {
  const t = text.trim();
  if (t === "") {
    return "Enter a call expression, e.g. fn(torch.randn(64, 64), w, b)";
  }
  if (t.includes(PLACEHOLDER)) {
    return `Replace each ${PLACEHOLDER} with a value, e.g. torch.randn(64, 64)`;
  }
  if (!t.endsWith(")") || !t.includes("(")) {
    return "A call expression ends with the call, e.g. fn(x, w, b)";
  }
  let depth = 0;
  let quote: string | undefined;
  for (let i = 0; i < t.length; i++) {
    const c = t.charAt(i);
    if (quote !== undefined) {
      if (c === "\\") {
        i++;
      } else if (c === quote) {
        quote = undefined;
      }
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
    } else if ("([{".includes(c)) {
      depth++;
    } else if (")]}".includes(c)) {
      depth--;
      if (depth < 0) {
        return "Unbalanced brackets";
      }
    }
  }
  if (quote !== undefined) {
    return "Unterminated string";
  }
  return depth === 0 ? undefined : "Unbalanced brackets";
}
