/**
 * Reading the profile report the server returns (pure logic, no `vscode` import). The report
 * is the analysis engine's JSON; the client needs only a headline and the trace file.
 */

function get(obj: unknown, key: string): unknown {
  return typeof obj === "object" && obj !== null ? (obj as Record<string, unknown>)[key] : undefined;
}

function firstString(obj: unknown, paths: readonly (readonly string[])[]): string | undefined {
  for (const path of paths) {
    let v: unknown = obj;
    for (const k of path) {
      v = get(v, k);
    }
    if (typeof v === "string" && v.trim() !== "") {
      return v;
    }
  }
  return undefined;
}

/** The verdict headline, e.g. `overhead-bound (CPU): 2.7 µs per call, ~83 % dispatch`. */
export function reportHeadline(report: unknown): string | undefined {
  return firstString(report, [["verdict", "headline"], ["headline"], ["verdict", "message"], ["summary"]]);
}

/** Path of the Chrome trace the run wrote, if the report names one. */
export function reportTracePath(report: unknown): string | undefined {
  return firstString(report, [["trace_path"], ["trace"], ["trace_file"], ["run", "trace_path"], ["meta", "trace_path"]]);
}

/** Accept `{uri, line}` (CodeLens, server) or a URI string/object with an optional line. */
export interface Location0 {
  uri: string;
  line: number;
}

export function parseLocationArg(arg: unknown): Partial<Location0> {
  if (typeof arg === "string") {
    return { uri: arg };
  }
  const uri = get(arg, "uri");
  const line = get(arg, "line");
  const out: Partial<Location0> = {};
  if (typeof uri === "string") {
    out.uri = uri;
  }
  if (typeof line === "number" && Number.isInteger(line) && line >= 0) {
    out.line = line;
  }
  return out;
}
