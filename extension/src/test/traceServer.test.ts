import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import {
  PERFETTO_PORT,
  PortInUseError,
  perfettoLink,
  type RunningTraceServer,
  safeName,
  startTraceServer,
} from "../traceServer";

const ORIGIN = "https://ui.perfetto.dev";
const TRACE = new Uint8Array(10_000).map((_, i) => (i * 7) % 256);

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function request(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

function connectRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (e: NodeJS.ErrnoException) => {
      resolve(e.code === "ECONNREFUSED");
    });
  });
}

describe("trace server (127.0.0.1:9001 for the Perfetto UI)", () => {
  let server: RunningTraceServer;

  beforeEach(async () => {
    server = await startTraceServer({ data: TRACE, name: "m.fn.20260101-120000-000.1.pt.trace.json.gz", origin: ORIGIN, port: 0 });
  });

  afterEach(async () => {
    await server.close();
  });

  it("binds 127.0.0.1 only, at an unguessable path", async () => {
    assert.equal(server.address.address, "127.0.0.1");
    assert.ok(server.port > 0);
    assert.ok(server.token.length >= 32);
    assert.equal(server.url, `http://127.0.0.1:${server.port}/${server.token}/m.fn.20260101-120000-000.1.pt.trace.json.gz`);
    const other = await startTraceServer({ data: TRACE, name: "x", origin: ORIGIN, port: 0 });
    assert.notEqual(other.token, server.token);
    await other.close();
    // The kernel's view: the listening socket is on 127.0.0.1 (0100007F).
    const listening = fs
      .readFileSync("/proc/net/tcp", "utf8")
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[3] === "0A" && f[1]?.endsWith(`:${server.port.toString(16).toUpperCase().padStart(4, "0")}`))
      .map((f) => f[1]);
    assert.deepEqual(listening, [`0100007F:${server.port.toString(16).toUpperCase().padStart(4, "0")}`]);
  });

  it("serves the trace to the right token once, with the CORS headers, then stops", async () => {
    const reply = await request(server.port, "GET", server.path, { Origin: ORIGIN });
    assert.equal(reply.status, 200);
    assert.deepEqual(new Uint8Array(reply.body), TRACE);
    assert.equal(reply.headers["access-control-allow-origin"], ORIGIN);
    assert.equal(reply.headers["cache-control"], "no-cache");
    assert.equal(await server.done, "served");
    assert.equal(await connectRefused(server.port), true);
  });

  for (const [method, path] of [
    ["GET", "/status"],
    ["POST", "/status"],
    ["OPTIONS", "/status"],
    ["GET", "/"],
    ["GET", "/wrong-token/m.json.gz"],
    ["GET", "TOKEN/other.json.gz"],
    ["HEAD", "PATH"],
    ["POST", "PATH"],
    ["PUT", "PATH"],
    ["DELETE", "PATH"],
  ] as const) {
    it(`answers 404 to ${method} ${path}`, async () => {
      const p = path.replace("PATH", server.path).replace("TOKEN", `/${server.token}`);
      const reply = await request(server.port, method, p, { Origin: ORIGIN });
      assert.equal(reply.status, 404);
      assert.equal(reply.headers["access-control-allow-origin"], undefined);
      assert.equal(reply.body.length, 0);
      // Still serving the right path.
      assert.equal((await request(server.port, "GET", server.path)).status, 200);
    });
  }

  it("answers the preflight with 204 and Private Network Access", async () => {
    const reply = await request(server.port, "OPTIONS", server.path, {
      Origin: ORIGIN,
      "Access-Control-Request-Method": "GET",
      "Access-Control-Request-Private-Network": "true",
      "Access-Control-Request-Headers": "range",
    });
    assert.equal(reply.status, 204);
    assert.equal(reply.headers["access-control-allow-origin"], ORIGIN);
    assert.equal(reply.headers["access-control-allow-private-network"], "true");
    assert.equal(reply.headers["access-control-allow-headers"], "range");
    // Not the fetch: still serving.
    assert.equal((await request(server.port, "GET", server.path)).status, 200);
    assert.equal(await server.done, "served");
  });

  it("stops after the timeout without a fetch", async () => {
    const short = await startTraceServer({ data: TRACE, name: "t.json", origin: ORIGIN, port: 0, timeoutMs: 100 });
    assert.equal(await short.done, "timeout");
    assert.equal(await connectRefused(short.port), true);
  });

  it("says which process holds the port", async function () {
    this.timeout(20000);
    const holder = spawn(
      process.execPath,
      ["-e", "const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port));process.stdin.resume()"],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    try {
      const port = await new Promise<number>((resolve, reject) => {
        holder.stdout.once("data", (d: Buffer) => {
          resolve(Number(d.toString().trim()));
        });
        holder.once("error", reject);
      });
      await assert.rejects(
        startTraceServer({ data: TRACE, name: "t.json", origin: ORIGIN, port }),
        (e: unknown) => {
          assert.ok(e instanceof PortInUseError);
          assert.match(e.message, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use by pid ${holder.pid ?? -1}`));
          assert.match(e.message, /only fetches plain-http traces from http:\/\/127\.0\.0\.1:9001/);
          return true;
        },
      );
    } finally {
      holder.kill();
    }
  });

  it("builds the Perfetto link and URL-safe names", () => {
    assert.equal(PERFETTO_PORT, 9001);
    assert.equal(perfettoLink("https://ui.perfetto.dev/", "http://127.0.0.1:9001/t/a.json"), "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/t/a.json");
    assert.equal(safeName("a b+c&d#e.json.gz"), "a_b_c_d_e.json.gz");
    assert.equal(safeName("..."), "trace");
  });
});
