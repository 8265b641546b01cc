/**
 * Serve one trace to the Perfetto UI in a browser (DESIGN.md §5). No `vscode` import: unit
 * tested with real sockets.
 *
 * The Perfetto UI's Content-Security-Policy lets it fetch plain-http traces from one origin only,
 * `http://127.0.0.1:9001`, so the trace is served there and only there: bound to 127.0.0.1, at an
 * unguessable `/<token>/<name>`; every other path (including `/status`, which the UI probes for a
 * trace processor) and every other method is a 404; `GET` answers 200 with
 * `Access-Control-Allow-Origin: <Perfetto origin>` and `Cache-Control: no-cache`; the preflight
 * (`OPTIONS`) answers 204 with `Access-Control-Allow-Private-Network: true`. It stops after the
 * trace was fetched once, or after a timeout. The Python twin is
 * `server/torchscope/host/trace_server.py`; change both together.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";

export const LOOPBACK = "127.0.0.1";
export const PERFETTO_PORT = 9001;
export const DEFAULT_SERVE_TIMEOUT_MS = 300_000;

export class TraceServerError extends Error {}

/** Port 9001 on 127.0.0.1 is taken; the message says by whom (when it can tell) and what to do. */
export class PortInUseError extends TraceServerError {
  constructor(
    message: string,
    readonly port: number,
  ) {
    super(message);
  }
}

/** `<origin>/#!/?url=<traceUrl>`: the Perfetto UI link that loads `traceUrl`. */
export function perfettoLink(origin: string, traceUrl: string): string {
  return `${origin.replace(/\/+$/, "")}/#!/?url=${traceUrl}`;
}

/** A URL-safe file name (`+`, `&`, `#` or spaces would break the `#!/?url=` link). */
export function safeName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_.-]+/g, "_").replace(/^[._]+|[._]+$/g, "");
  return (cleaned === "" ? "trace" : cleaned).slice(0, 120);
}

function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = fs.readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== "0A") {
        continue; // 0A = LISTEN
      }
      const local = fields[1] ?? "";
      if (parseInt(local.slice(local.lastIndexOf(":") + 1), 16) === port) {
        inodes.add(fields[9] ?? "");
      }
    }
  }
  return inodes;
}

/** `pid 123 (python3 -m http.server 9001)` for the process listening on `port`, if visible (Linux). */
export function describePortOwner(port: number): string | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) {
    return undefined;
  }
  const wanted = new Set([...inodes].map((i) => `socket:[${i}]`));
  let pids: string[];
  try {
    pids = fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (wanted.has(link)) {
        let cmdline = "?";
        try {
          cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim().slice(0, 160);
        } catch {
          // gone meanwhile
        }
        return `pid ${pid} (${cmdline})`;
      }
    }
  }
  return undefined;
}

export function portInUseMessage(port: number, origin: string): string {
  const owner = describePortOwner(port);
  const who =
    owner !== undefined
      ? `by ${owner}; stop it (kill ${owner.split(" ")[1] ?? ""}) and try again`
      : `by another process; find it with \`ss -ltnp 'sport = :${port}'\` or \`lsof -iTCP:${port} -sTCP:LISTEN\`, stop it and try again`;
  return (
    `cannot serve the trace: port ${port} on ${LOOPBACK} is already in use ${who}. ` +
    `The Perfetto UI (${origin}) only fetches plain-http traces from http://${LOOPBACK}:${PERFETTO_PORT} ` +
    "(the port is often held by `trace_processor_shell --httpd` or by a `torchscope … --open` still waiting). " +
    "'Open trace' shows the trace in a VS Code panel without any port."
  );
}

export interface TraceServerOptions {
  /** The trace bytes (read on the workspace side). */
  data: Uint8Array;
  /** File name shown by Perfetto; made URL-safe. */
  name: string;
  /** Perfetto UI origin, e.g. `https://ui.perfetto.dev`. */
  origin: string;
  /** Default 9001; 0 picks a free port (tests). */
  port?: number;
  /** Stop serving after this long without a fetch (default 5 minutes). */
  timeoutMs?: number;
}

export type ServeOutcome = "served" | "timeout" | "closed";

export interface RunningTraceServer {
  readonly port: number;
  readonly token: string;
  readonly name: string;
  /** `/<token>/<name>` */
  readonly path: string;
  /** `http://127.0.0.1:<port>/<token>/<name>` */
  readonly url: string;
  /** The bound address (always 127.0.0.1). */
  readonly address: { address: string; port: number };
  /** Settles once the server stopped: after the fetch, the timeout, or `close()`. */
  readonly done: Promise<ServeOutcome>;
  close(): Promise<void>;
}

/** Start serving; rejects with `PortInUseError` (naming the owner when possible) if the port is taken. */
export function startTraceServer(options: TraceServerOptions): Promise<RunningTraceServer> {
  const origin = options.origin.replace(/\/+$/, "");
  const requestedPort = options.port ?? PERFETTO_PORT;
  const token = randomBytes(24).toString("base64url");
  const name = safeName(options.name);
  const tracePath = Buffer.from(`/${token}/${encodeURIComponent(name)}`);
  const body = Buffer.from(options.data.buffer, options.data.byteOffset, options.data.byteLength);

  let settle: (outcome: ServeOutcome) => void = () => undefined;
  const done = new Promise<ServeOutcome>((resolve) => {
    settle = resolve;
  });
  let timer: NodeJS.Timeout | undefined;
  let stopping: Promise<void> | undefined;

  const isTracePath = (url: string | undefined): boolean => {
    const requested = Buffer.from((url ?? "").split("?")[0] ?? "");
    return requested.length === tracePath.length && timingSafeEqual(requested, tracePath);
  };

  const server = http.createServer((req, res) => {
    res.setHeader("Connection", "close");
    res.setHeader("Cache-Control", "no-cache");
    if (!isTracePath(req.url) || (req.method !== "GET" && req.method !== "OPTIONS")) {
      res.writeHead(404, { "Content-Length": "0" }).end();
      return;
    }
    if (req.method === "OPTIONS") {
      const headers: Record<string, string> = {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": "GET",
        "Access-Control-Allow-Private-Network": "true",
        "Access-Control-Max-Age": "60",
        "Content-Length": "0",
      };
      const requested = req.headers["access-control-request-headers"];
      if (typeof requested === "string" && requested !== "") {
        headers["Access-Control-Allow-Headers"] = requested;
      }
      res.writeHead(204, headers).end();
      return;
    }
    res.writeHead(200, {
      "Content-Type": "application/octet-stream",
      "Content-Length": String(body.byteLength),
      "Access-Control-Allow-Origin": origin,
    });
    res.end(body, () => {
      void stop("served");
    });
  });

  const stop = (outcome: ServeOutcome): Promise<void> => {
    stopping ??= new Promise<void>((resolve) => {
      if (timer !== undefined) {
        clearTimeout(timer);
      }
      server.close(() => {
        resolve();
      });
      server.closeIdleConnections();
    }).then(() => {
      settle(outcome);
    });
    return stopping;
  };

  return new Promise<RunningTraceServer>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EADDRINUSE") {
        reject(new PortInUseError(portInUseMessage(requestedPort, origin), requestedPort));
      } else {
        reject(new TraceServerError(`cannot listen on ${LOOPBACK}:${requestedPort} to serve the trace: ${e.message}`));
      }
    });
    server.listen({ host: LOOPBACK, port: requestedPort, exclusive: true }, () => {
      const bound = server.address();
      if (bound === null || typeof bound === "string") {
        void stop("closed");
        reject(new TraceServerError("the trace server has no TCP address"));
        return;
      }
      timer = setTimeout(() => void stop("timeout"), options.timeoutMs ?? DEFAULT_SERVE_TIMEOUT_MS);
      const urlPath = tracePath.toString();
      resolve({
        port: bound.port,
        token,
        name,
        path: urlPath,
        url: `http://${LOOPBACK}:${bound.port}${urlPath}`,
        address: { address: bound.address, port: bound.port },
        done,
        close: () => stop("closed"),
      });
    });
  });
}

/** The served name of a trace file (its base name, URL-safe). */
export function servedName(file: string): string {
  return safeName(path.basename(file));
}
