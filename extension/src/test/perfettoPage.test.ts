import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { type Browser, chromium } from "playwright-core";
import {
  embedUrl,
  type PageEnv,
  type PageToHost,
  parsePerfettoOrigin,
  perfettoHtml,
  perfettoPageMain,
  plainBytes,
  traceTitle,
} from "../perfettoPage";

const REPO = path.resolve(__dirname, "../../../..");
const STUB = path.join(REPO, "tests", "vscode", "perfetto-stub.html");
const CHROMIUM = process.env.TORCHSCOPE_E2E_CHROMIUM ?? "/usr/bin/chromium";
const ORIGIN = "https://perfetto.test";

/** Resolves when `check()` holds (polled), rejects after `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

type Listener = (e: { data: unknown; origin: string; source: unknown }) => void;

/** A fake Perfetto frame and page environment, on real timers. */
function fakePage(options: { answers: boolean; origin?: string }) {
  const listeners: Listener[] = [];
  const toHost: PageToHost[] = [];
  const received: { message: unknown; targetOrigin: string }[] = [];
  const status: string[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let pings = 0;
  const frameWindow = {
    postMessage(message: unknown, targetOrigin: string) {
      if (message === "PING") {
        pings++;
        if (options.answers) {
          setImmediate(() => {
            for (const l of listeners) {
              l({ data: "PONG", origin: options.origin ?? ORIGIN, source: frameWindow });
            }
          });
        }
        return;
      }
      received.push({ message, targetOrigin });
    },
  };
  const env: PageEnv = {
    win: {
      addEventListener: (_type, listener) => listeners.push(listener),
      setInterval: (fn, ms) => {
        const t = setInterval(fn, ms);
        timers.add(t);
        return t;
      },
      clearInterval: (id) => {
        clearInterval(id as NodeJS.Timeout);
      },
      setTimeout: (fn, ms) => {
        const t = setTimeout(fn, ms);
        timers.add(t);
        return t;
      },
      clearTimeout: (id) => {
        clearTimeout(id as NodeJS.Timeout);
      },
    },
    frame: { contentWindow: frameWindow },
    host: { postMessage: (m) => toHost.push(m) },
    setStatus: (t) => status.push(t),
  };
  const fromHost = (data: unknown) => {
    for (const l of listeners) {
      l({ data, origin: "vscode-webview://host", source: null });
    }
  };
  const fromFrame = (data: unknown, origin = ORIGIN) => {
    for (const l of listeners) {
      l({ data, origin, source: frameWindow });
    }
  };
  const dispose = () => {
    for (const t of timers) {
      clearTimeout(t);
    }
  };
  return { env, toHost, received, status, fromHost, fromFrame, dispose, pings: () => pings };
}

const CONFIG = { origin: ORIGIN, embedUrl: embedUrl(ORIGIN), pingIntervalMs: 5, hintAfterMs: 10_000, giveUpAfterMs: 20_000 };

describe("Perfetto page script (fake frame)", () => {
  it("PINGs until PONG, then posts the trace once in Perfetto's shape", async () => {
    const page = fakePage({ answers: true });
    try {
      perfettoPageMain(CONFIG, page.env);
      assert.deepEqual(page.toHost[0], { type: "ready" });
      const bytes = new Uint8Array([1, 2, 3, 4, 5]);
      page.fromHost({ type: "trace", bytes, title: "m.fn · 2026-01-01 12:00:00", fileName: "m.fn.json.gz" });
      await until(() => page.received.length > 0, 5000, "the trace message");
      assert.ok(page.pings() >= 1);
      const [{ message, targetOrigin }] = page.received as [{ message: { perfetto: Record<string, unknown> }; targetOrigin: string }];
      assert.equal(targetOrigin, ORIGIN);
      assert.deepEqual(Object.keys(message.perfetto).sort(), ["buffer", "fileName", "keepApiOpen", "title"]);
      assert.ok(message.perfetto.buffer instanceof ArrayBuffer);
      assert.deepEqual(new Uint8Array(message.perfetto.buffer), bytes);
      assert.equal(message.perfetto.title, "m.fn · 2026-01-01 12:00:00");
      assert.equal(message.perfetto.fileName, "m.fn.json.gz");
      assert.equal(message.perfetto.keepApiOpen, true);
      assert.deepEqual(page.toHost.slice(1), [{ type: "pong" }, { type: "sent", size: 5 }]);
      // More PONGs or traces change nothing; the pings stopped.
      const pingsAfter = page.pings();
      page.fromFrame("PONG");
      page.fromHost({ type: "trace", bytes: [9], title: "x", fileName: "x" });
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(page.received.length, 1);
      assert.equal(page.pings(), pingsAfter);
      assert.equal(page.status.at(-1), "");
    } finally {
      page.dispose();
    }
  });

  it("waits for the trace when the UI answers first; accepts a Buffer that went through JSON", async () => {
    const page = fakePage({ answers: true });
    try {
      perfettoPageMain(CONFIG, page.env);
      await until(() => page.toHost.some((m) => m.type === "pong"), 5000, "PONG");
      assert.equal(page.received.length, 0);
      page.fromHost({ type: "trace", bytes: JSON.parse(JSON.stringify(Buffer.from([7, 8]))) as unknown, title: "t", fileName: "f.json" });
      assert.equal(page.received.length, 1);
      const msg = page.received[0]?.message as { perfetto: { buffer: ArrayBuffer } };
      assert.deepEqual(new Uint8Array(msg.perfetto.buffer), new Uint8Array([7, 8]));
    } finally {
      page.dispose();
    }
  });

  it("ignores PONG from another origin or window, and traces from the frame", async () => {
    const page = fakePage({ answers: false });
    try {
      perfettoPageMain(CONFIG, page.env);
      page.fromHost({ type: "trace", bytes: [1], title: "t", fileName: "f" });
      page.fromFrame("PONG", "https://evil.test");
      for (const l of [page.fromHost]) {
        l("PONG"); // not from the frame
      }
      page.fromFrame({ type: "trace", bytes: [6, 6], title: "bad", fileName: "bad" });
      await until(() => page.pings() >= 3, 5000, "pings");
      assert.equal(page.received.length, 0);
      page.fromFrame("PONG");
      assert.equal(page.received.length, 1);
      const msg = page.received[0]?.message as { perfetto: { buffer: ArrayBuffer; title: string } };
      assert.equal(msg.perfetto.title, "t");
    } finally {
      page.dispose();
    }
  });

  it("says so when the UI never answers, then stops pinging", async () => {
    const page = fakePage({ answers: false });
    try {
      perfettoPageMain({ ...CONFIG, hintAfterMs: 20, giveUpAfterMs: 60 }, page.env);
      await until(() => page.toHost.some((m) => m.type === "timeout"), 5000, "the timeout");
      assert.ok(page.toHost.some((m) => m.type === "slow"));
      assert.match(page.status.at(-1) ?? "", /did not answer.*torchscope\.perfetto\.origin/);
      const pings = page.pings();
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(page.pings(), pings);
    } finally {
      page.dispose();
    }
  });
});

describe("Perfetto page helpers", () => {
  it("turns a Node Buffer into a plain Uint8Array of just its bytes", () => {
    const pool = Buffer.from("xxhello worldyy");
    const view = pool.subarray(2, 13);
    const plain = plainBytes(view);
    assert.equal(plain.constructor, Uint8Array);
    assert.equal(plain.buffer.byteLength, 11);
    assert.equal(Buffer.from(plain).toString(), "hello world");
    const whole = Buffer.alloc(4, 7);
    assert.equal(plainBytes(whole).constructor, Uint8Array);
    assert.deepEqual([...plainBytes(whole)], [7, 7, 7, 7]);
    const u8 = new Uint8Array([1, 2]);
    assert.equal(plainBytes(u8), u8);
  });

  it("parses the origin setting", () => {
    assert.deepEqual(parsePerfettoOrigin("https://ui.perfetto.dev/"), { base: "https://ui.perfetto.dev", origin: "https://ui.perfetto.dev" });
    assert.deepEqual(parsePerfettoOrigin("http://127.0.0.1:8080/perfetto"), {
      base: "http://127.0.0.1:8080/perfetto",
      origin: "http://127.0.0.1:8080",
    });
    assert.ok("error" in parsePerfettoOrigin("ui.perfetto.dev"));
    assert.ok("error" in parsePerfettoOrigin("javascript:alert(1)"));
    assert.ok("error" in parsePerfettoOrigin('https://x.dev/"><script>'));
    assert.equal(embedUrl("https://ui.perfetto.dev"), "https://ui.perfetto.dev/#!/?mode=embedded&hideSidebar=false");
  });

  it("titles torchscope's traces with the function and the time", () => {
    assert.equal(traceTitle("matmul_add.fn.20260102-030405-678.4242.pt.trace.json.gz"), "matmul_add.fn · 2026-01-02 03:04:05");
    assert.equal(traceTitle("model.Net.forward.20260102-030405-678.1.pt.trace.json.gz"), "model.Net.forward · 2026-01-02 03:04:05");
    assert.equal(traceTitle("run.json.gz"), "run.json.gz");
  });

  it("puts a nonce'd script, the CSP and the iframe in the HTML", () => {
    const html = perfettoHtml(CONFIG, "abc123", "vscode-resource:");
    assert.match(html, /script-src 'nonce-abc123'/);
    assert.match(html, new RegExp(`frame-src ${ORIGIN};`));
    assert.ok(html.includes(`<iframe id="perfetto" src="${ORIGIN}/#!/?mode=embedded&amp;hideSidebar=false"`));
    assert.ok(html.includes("acquireVsCodeApi()"));
  });
});

// The real page script in a real browser, against the stub Perfetto UI on another origin.
describe("Perfetto webview page in headless Chromium (stub Perfetto UI)", function () {
  this.timeout(60000);
  let browser: Browser | undefined;
  const servers: http.Server[] = [];

  function serve(handler: http.RequestListener): Promise<string> {
    const server = http.createServer(handler);
    servers.push(server);
    return new Promise((resolve) => {
      server.listen(0, "127.0.0.1", () => {
        resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      });
    });
  }

  before(function () {
    if (!fs.existsSync(CHROMIUM)) {
      // Installed by scripts/vscode/ensure-code-server.sh (the VS Code e2e needs it too).
      this.skip();
    }
  });

  after(async () => {
    await browser?.close();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("handshakes with the UI and hands it the trace bytes", async () => {
    let report: Record<string, unknown> | undefined;
    const stubOrigin = await serve((req, res) => {
      if (req.method === "POST" && req.url === "/received") {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString()));
        req.on("end", () => {
          report = JSON.parse(body) as Record<string, unknown>;
          res.writeHead(204).end();
        });
        return;
      }
      res.writeHead(200, { "Content-Type": "text/html" }).end(fs.readFileSync(STUB));
    });
    const config = { origin: stubOrigin, embedUrl: embedUrl(stubOrigin), pingIntervalMs: 50, hintAfterMs: 10_000, giveUpAfterMs: 30_000 };
    const html = perfettoHtml(config, "n0nce", "'self'");
    const hostOrigin = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" }).end(html);
    });

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--proxy-server=http://127.0.0.1:9"],
    });
    const page = await browser.newPage();
    const size = 300_000;
    // The webview's host: acquireVsCodeApi, answering "ready" with the trace like perfetto.ts.
    await page.addInitScript((n: number) => {
      const w = globalThis as unknown as Record<string, unknown> & { postMessage(m: unknown, o: string): void };
      const toHost: unknown[] = [];
      w.__toHost = toHost;
      w.acquireVsCodeApi = () => ({
        postMessage: (m: { type: string }) => {
          toHost.push(m);
          if (m.type === "ready") {
            const bytes = new Uint8Array(n);
            for (let i = 0; i < n; i++) {
              bytes[i] = (i * 31 + 7) % 256;
            }
            w.postMessage({ type: "trace", bytes, title: "matmul_add.fn · 2026-01-02 03:04:05", fileName: "t.pt.trace.json.gz" }, "*");
          }
        },
      });
    }, size);
    await page.goto(hostOrigin);
    const src = await page.locator("iframe#perfetto").getAttribute("src");
    assert.ok(src?.startsWith(`${stubOrigin}/#!/?mode=embedded`), String(src));
    await until(() => report !== undefined, 30000, "the stub's report");

    let h = 0x811c9dc5;
    for (let i = 0; i < size; i++) {
      h = Math.imul(h ^ ((i * 31 + 7) % 256), 0x01000193) >>> 0;
    }
    assert.ok(report !== undefined);
    assert.ok(Number(report.pings) >= 1);
    assert.deepEqual(report, {
      size,
      fnv1a: h,
      isArrayBuffer: true,
      title: "matmul_add.fn · 2026-01-02 03:04:05",
      fileName: "t.pt.trace.json.gz",
      keepApiOpen: true,
      keys: ["buffer", "fileName", "keepApiOpen", "title"],
      from: hostOrigin,
      pings: report.pings,
      hash: "#!/?mode=embedded&hideSidebar=false",
    });
    const toHost = await page.evaluate(() => (globalThis as unknown as { __toHost: unknown[] }).__toHost);
    assert.deepEqual(toHost, [{ type: "ready" }, { type: "pong" }, { type: "sent", size }]);
    assert.equal(await page.locator("#status").textContent(), "");
    // The stub shows it too (what the e2e reads inside VS Code).
    const shown = await page.frameLocator("iframe#perfetto").locator("#received").textContent();
    assert.equal((JSON.parse(shown ?? "{}") as { size?: number }).size, size);
  });
});
