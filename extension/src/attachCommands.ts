/**
 * **Profile this function in a running job…** (docs/attach.md): a quick pick of the jobs whose
 * torchscope agent listens on the workspace's host (`torchscope.listJobs`: over Remote-SSH the
 * language server, and so the pick, runs on the remote machine), then the server's
 * `torchscope.profileRunning` on the function at the cursor with progress. The server publishes
 * the verdict, hints and hovers like a profile's and shows a failure itself; cancelling the
 * progress restores the function in the job.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import type { CommandRow } from "./commandRow";
import type { CommandHost } from "./compareCommands";
import { ClientCommands, ServerCommands } from "./constants";
import { errorText, traceError, traceInfo } from "./log";
import { jobItems, type RunningJob } from "./jobs";
import { reportHeadline } from "./report";
import type { StatusBar } from "./statusBar";

export class AttachCommands {
  constructor(
    private readonly host: CommandHost,
    private readonly status: StatusBar,
  ) {}

  rows(): CommandRow[] {
    return [{ id: ClientCommands.profileRunning, run: (arg) => this.profileRunning(arg) }];
  }

  async profileRunning(arg: unknown): Promise<void> {
    const started = await this.host.start(arg, "profile it in a running job", false);
    if (started === undefined) {
      return;
    }
    const { client, located, target } = started;
    const answer = (await client.sendRequest(ExecuteCommandRequest.type, { command: ServerCommands.listJobs, arguments: [{}] })) as { jobs?: RunningJob[] };
    const jobs = answer.jobs ?? [];
    if (jobs.length === 0) {
      void vscode.window.showInformationMessage("torchscope: no running job with a torchscope agent on this host — start it with `python -m torchscope.agent train.py …` or TORCHSCOPE_AGENT=1 (docs/attach.md)");
      return;
    }
    const picked = await vscode.window.showQuickPick(jobItems(jobs), { title: `torchscope: profile ${target.qualname} in which running job?` });
    if (picked === undefined) {
      return;
    }
    const args = { uri: located.document.uri.toString(), line: target.line, pid: picked.pid };
    traceInfo(`profile ${target.qualname} in running job ${picked.pid}`);
    this.status.set({ kind: "profiling", target: target.qualname });
    try {
      const title = `torchscope: profiling ${target.qualname} in process ${picked.pid}`;
      const result = await this.host.runWithProgress(client, title, ServerCommands.profileRunning, args);
      if (result === "cancelled") {
        this.status.set({ kind: "idle", detail: "cancelled" });
      } else if (result.ok) {
        this.status.set({ kind: "idle", detail: `${target.qualname}: ${reportHeadline(result.report) ?? "done"}` });
      } else {
        traceError(`profile ${target.qualname} in job ${picked.pid}: ${result.error}`); // the server showed it
        this.status.set({ kind: "error", message: `${target.qualname}: ${result.error}` });
      }
    } catch (e) {
      this.status.set({ kind: "error", message: `${target.qualname}: ${errorText(e)}` });
      throw e;
    }
  }
}
