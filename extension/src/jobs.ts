/**
 * **Profile this function in a running job…**: the jobs' quick pick rows (pure, no `vscode`),
 * from `torchscope.listJobs`' answer.
 */

/** A quick pick row (a `vscode.QuickPickItem`) with the job's pid. */
export interface JobItem {
  label: string;
  description: string;
  detail: string;
  pid: number;
}

/** One row of `torchscope.listJobs`' answer. */
export interface RunningJob {
  pid: number;
  command: string;
  rank: number | null;
  world_size: number | null;
  age_s: number;
}

/** `42 s`, `7 min`, `3.2 h`: as `torchscope jobs` prints a job's age. */
export function ageText(seconds: number): string {
  if (seconds < 120) {
    return `${seconds.toFixed(0)} s`;
  }
  return seconds < 7200 ? `${(seconds / 60).toFixed(0)} min` : `${(seconds / 3600).toFixed(1)} h`;
}

/** The pick's rows: pid and rank, the command, the age. */
export function jobItems(jobs: RunningJob[]): JobItem[] {
  return jobs.map((job) => ({
    label: `${job.pid}`,
    description: job.rank === null ? job.command : `rank ${job.rank}/${job.world_size ?? "?"} · ${job.command}`,
    detail: `running for ${ageText(job.age_s)}`,
    pid: job.pid,
  }));
}
