/**
 * `waymark runs signal <runId> <name>` names no wait: the client delivers it to the open wait of
 * that name, or buffers it for the next one. From a terminal, a signal for a wait that was
 * already decided is nearly always a mistake, and "buffered" would hide it; the CLI refuses it
 * (exit 1, nothing written), as the webhook answers an approval for a decided wait (409), unless
 * `--buffer` asks for the buffering.
 */
import type { Client } from "../client.ts";
import { WaitResolvedError } from "../core/errors.ts";
import type { ResolutionRecord, StepRecord } from "../core/records.ts";
import { decision } from "../core/run/signals.ts";
import { TERMINAL_STATUSES } from "../ports.ts";

/**
 * The refusal for a by-name signal when the latest wait for `signal` is decided and none is
 * open; `undefined` when the signal would reach a wait (or the run is not waiting for one yet,
 * or this is a retry of the delivery that decided it, or the run has ended: the client answers).
 *
 * @example
 * ```ts
 * const refused = await decidedWait(client, "exp-1", "decision", undefined);
 * if (refused) return fail(refused.message);
 * ```
 */
export async function decidedWait(client: Client, runId: string, signal: string, signalId: string | undefined): Promise<WaitResolvedError | undefined> {
  const { run, entries } = await client.history(runId);
  if (TERMINAL_STATUSES.has(run.status)) return undefined;
  const waits: StepRecord[] = [];
  const resolutions = new Map<string, ResolutionRecord>();
  for (const { record } of entries) {
    if (record?.type === "step" && record.kind === "wait" && record.signal === signal) waits.push(record);
    if (record?.type === "resolution") resolutions.set(record.stepId, record);
  }
  if (waits.some((w) => !resolutions.has(w.stepId))) return undefined;
  const latest = waits.at(-1);
  const decided = latest && resolutions.get(latest.stepId);
  if (!latest || !decided) return undefined;
  if (decided.via === "signal" && signalId !== undefined && decided.signalId === signalId) return undefined;
  return new WaitResolvedError(runId, latest.stepId, decision(decided));
}
