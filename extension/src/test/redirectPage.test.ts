import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { redirectHtml, removeRedirectPage, writeRedirectPage } from "../redirectPage";

const LINK = "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/s3cr3t-token/m.fn.pt.trace.json.gz&x=<b>";

describe("private redirect page for Open trace in browser", () => {
  let parent: string;
  beforeEach(() => {
    parent = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ts-redirect-")), "open");
  });
  afterEach(() => {
    fs.rmSync(path.dirname(parent), { recursive: true, force: true });
  });

  it("is readable by the user only, in a fresh private folder", () => {
    const page = writeRedirectPage(parent, LINK);
    assert.equal(fs.statSync(page).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(page)).mode & 0o777, 0o700);
    assert.notEqual(writeRedirectPage(parent, LINK), page); // each open gets its own
    assert.ok(!page.includes("s3cr3t"), "the path (what the opener sees) holds no token");
  });

  it("redirects to the link, escaped for HTML and for the script", () => {
    const html = fs.readFileSync(writeRedirectPage(parent, LINK), "utf8");
    const refresh = /content="0;url=([^"]+)"/.exec(html)?.[1];
    assert.equal(refresh?.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&"), LINK);
    assert.ok(html.includes(`location.replace(${JSON.stringify(LINK).replace(/</g, "\\u003c")})`));
    assert.ok(!html.includes("<b>"), "the link cannot inject markup");
    assert.equal(redirectHtml(LINK), html);
  });

  it("is removed with its folder", () => {
    const page = writeRedirectPage(parent, LINK);
    removeRedirectPage(page);
    assert.equal(fs.existsSync(path.dirname(page)), false);
    removeRedirectPage(page); // twice is fine
  });
});
