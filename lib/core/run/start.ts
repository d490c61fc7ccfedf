/**
 * Starting a run, idempotently by run id: counted against its rate window first when over-rate
 * starts are refused, created if absent (the same id with the same input returns the run; with
 * another, a conflict), recorded as its key's latest start when debounced, and woken.
 */
import type { AnyWorkflow } from "../definition.ts";
import { RateLimitedError, RunConflictError } from "../errors.ts";
import { debounceScope, rateScope } from "../flow-control.ts";
import type { RunMeta } from "../../ports.ts";
import type { RunPorts } from "./ports.ts";

export interface StartRequest {
  runId: string;
  /** The input as the run keeps it (a reference when it went to the payload store). */
  stored: unknown;
  /** The validated input, for the flow-control keys. */
  input: unknown;
  now: number;
  /** Whether an existing run with this id was started with this very input. */
  sameInput(run: RunMeta): Promise<boolean>;
}

export async function startRun(p: RunPorts, def: AnyWorkflow, req: StartRequest): Promise<{ created: boolean; run: RunMeta }> {
  const { store, wakes } = p;
  const { runId, now } = req;
  const rate = def.rateLimit;
  if (rate && rate.onLimit === "reject") {
    // Counted before the run exists; a retried start of the same run id keeps its count.
    const key = String(rate.key(req.input));
    if (!(await store.takeSlot(rateScope(def.key, key), rate.limit, { runId, expiresAt: now + rate.periodMs }, now))) throw new RateLimitedError(def.key, key);
  }
  const { created, run } = await store.createRun({ runId, workflow: def.key, input: req.stored, createdAt: now });
  // After continueAsNew the run holds its latest input; a retried start is judged by workflow alone.
  const same = run.workflow === def.key && (created || (run.incarnation ?? 1) > 1 || (await req.sameInput(run)));
  if (!same) throw new RunConflictError(runId);
  const debounce = def.debounce;
  if (debounce) {
    // This start is the key's latest; the run waits out the period, then runs only if still so.
    await store.markLatest(debounceScope(def.key, String(debounce.key(req.input))), runId, run.createdAt);
    if (created || run.status === "pending") await wakes.schedule({ runId, at: run.createdAt + debounce.periodMs, reason: "start", key: "start" });
  } else if (created || run.status === "pending") await wakes.schedule({ runId, at: now, reason: "start", key: "start" });
  return { created, run };
}
