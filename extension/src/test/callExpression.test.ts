import * as assert from "node:assert/strict";
import {
  buildCallTemplate,
  calleeExpression,
  callStateKey,
  decideCall,
  firstPlaceholderSelection,
  isMethod,
  validateCallExpression,
} from "../callExpression";
import type { ParamInfo, TargetInfo } from "../types";

const p = (name: string, kind: ParamInfo["kind"] = "positional", has_default = false): ParamInfo => ({ name, kind, has_default });

function target(over: Partial<TargetInfo> = {}): TargetInfo {
  return { qualname: "fn", line: 3, params: [p("x"), p("w"), p("b")], directive: null, needs_call: true, ...over };
}

describe("call-expression templates", () => {
  it("fills each required parameter by keyword", () => {
    assert.equal(buildCallTemplate(target()), "fn(x=…, w=…, b=…)");
  });

  it("skips parameters with defaults, *args and **kwargs", () => {
    const t = target({ params: [p("x"), p("scale", "positional", true), p("args", "var_positional"), p("kw", "var_keyword")] });
    assert.equal(buildCallTemplate(t), "fn(x=…)");
  });

  it("keeps required keyword-only parameters", () => {
    const t = target({ params: [p("x"), p("dim", "keyword"), p("eps", "keyword", true)] });
    assert.equal(buildCallTemplate(t), "fn(x=…, dim=…)");
  });

  it("fills positional-only parameters by position", () => {
    const t = target({ params: [p("a", "positional_only"), p("b")] });
    assert.equal(buildCallTemplate(t), "fn(…, b=…)");
  });

  it("gives an empty call for a function with no parameters", () => {
    assert.equal(buildCallTemplate(target({ params: [] })), "fn()");
  });

  it("skips self on methods and builds the receiver", () => {
    const t = target({ qualname: "Model.forward", params: [p("self"), p("x")] });
    assert.equal(buildCallTemplate(t), "Model().forward(x=…)");
  });

  it("skips cls on classmethods", () => {
    const t = target({ qualname: "Cfg.build", params: [p("cls"), p("n", "positional", true)] });
    assert.equal(buildCallTemplate(t), "Cfg().build()");
  });

  it("keeps a parameter named self on a plain function", () => {
    assert.equal(buildCallTemplate(target({ params: [p("self")] })), "fn(self=…)");
  });

  it("trusts the server's is_method", () => {
    assert.equal(buildCallTemplate(target({ qualname: "Model.forward", is_method: true, params: [p("this"), p("x")] })), "Model().forward(this=…, x=…)");
    assert.equal(buildCallTemplate(target({ qualname: "Model.helper", is_method: false, params: [p("self"), p("x")] })), "helper(self=…, x=…)");
  });

  it("uses the bare name for nested functions", () => {
    assert.equal(isMethod("outer.<locals>.inner"), false);
    assert.equal(calleeExpression("outer.<locals>.inner"), "inner");
    assert.equal(buildCallTemplate(target({ qualname: "outer.<locals>.inner", params: [p("x")] })), "inner(x=…)");
  });

  it("handles nested classes", () => {
    assert.equal(calleeExpression("Outer.Inner.run"), "Inner().run");
  });

  it("selects the first placeholder", () => {
    assert.deepEqual(firstPlaceholderSelection("fn(x=…, w=…)"), [5, 6]);
    assert.equal(firstPlaceholderSelection("fn()"), undefined);
  });
});

describe("where the call comes from", () => {
  it("lets the server read a directive", () => {
    assert.deepEqual(decideCall(target({ directive: "fn(a, b, c)" }), "fn(1, 2, 3)"), { kind: "none", reason: "directive" });
  });

  it("uses the remembered call", () => {
    assert.deepEqual(decideCall(target(), " fn(1, 2, 3) "), { kind: "remembered", call: "fn(1, 2, 3)" });
  });

  it("asks with the template when nothing is known", () => {
    assert.deepEqual(decideCall(target(), undefined), { kind: "ask", template: "fn(x=…, w=…, b=…)" });
    assert.deepEqual(decideCall(target(), "  "), { kind: "ask", template: "fn(x=…, w=…, b=…)" });
  });

  it("never asks for a function without required parameters", () => {
    assert.deepEqual(decideCall(target({ needs_call: false, params: [] }), undefined), { kind: "none", reason: "no-arguments" });
  });

  it("keys remembered calls by file and qualname", () => {
    assert.equal(callStateKey("file:///w/a.py", "M.forward"), "torchscope.call:file:///w/a.py#M.forward");
    assert.notEqual(callStateKey("file:///w/a.py", "fn"), callStateKey("file:///w/b.py", "fn"));
  });
});

describe("call-expression validation", () => {
  it("accepts calls", () => {
    assert.equal(validateCallExpression("fn(torch.randn(8, 8), w, b)"), undefined);
    assert.equal(validateCallExpression("Model().cuda().forward(x=torch.ones(2, 3))"), undefined);
    assert.equal(validateCallExpression("fn(')', \"(\")"), undefined);
  });

  it("rejects empty text, placeholders and unbalanced brackets", () => {
    assert.match(validateCallExpression("  ") ?? "", /Enter a call/);
    assert.match(validateCallExpression("fn(x=…)") ?? "", /Replace/);
    assert.match(validateCallExpression("fn(torch.randn(8, 8)") ?? "", /ends with the call|Unbalanced/);
    assert.match(validateCallExpression("fn(x))(") ?? "", /ends with the call|Unbalanced/);
    assert.match(validateCallExpression("fn(x)) + g(") ?? "", /ends with the call|Unbalanced/);
    assert.match(validateCallExpression("fn('x)") ?? "", /Unterminated|Unbalanced/);
    assert.match(validateCallExpression("fn") ?? "", /ends with the call/);
  });
});
