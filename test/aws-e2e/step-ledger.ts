/**
 * The test service every e2e workflow calls from its steps: it records each execution of a step
 * body by its idempotency key, in a JSON-lines file (one synchronous append, so it survives a
 * SIGKILL and is shared with a child "Lambda" process). Tests count executions per key.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";

export interface StepExecution {
  /** `<runId>/<stepId>`, as the step received it. */
  key: string;
  attempt: number;
  pid: number;
  at: number;
}

export class StepLedger {
  constructor(readonly file: string) {}

  record(key: string, attempt: number): void {
    appendFileSync(this.file, `${JSON.stringify({ key, attempt, pid: process.pid, at: Date.now() } satisfies StepExecution)}\n`);
  }

  read(): StepExecution[] {
    if (!existsSync(this.file)) return [];
    return readFileSync(this.file, "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as StepExecution);
  }

  /** Executions per idempotency key, optionally only of one run. */
  counts(runId?: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.read()) if (runId === undefined || e.key.startsWith(`${runId}/`)) out.set(e.key, (out.get(e.key) ?? 0) + 1);
    return out;
  }

  /** Keys executed more than once (of one run, or all). */
  repeated(runId?: string): Array<[string, number]> {
    return [...this.counts(runId)].filter(([, n]) => n > 1);
  }
}
