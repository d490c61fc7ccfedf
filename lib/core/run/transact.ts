/**
 * `step.transact`'s protocol event: the user's writes and the step's record in one transaction,
 * the record write-once like every append (journal.ts). The sequence, and why each part:
 *
 *   1. transactRecord(record, ops, requestId)   one TransactWriteItems on DynamoDB
 *   2. its answer lost (a thrown transient error): the same request once more, same requestId.
 *      Within DynamoDB's 10-minute token window the retry is answered as the first attempt's
 *      success; after it, the record's write-once condition refuses it and hands back the
 *      record: our own body, so written — never a second application of the user's writes.
 *   3. that retry also lost: one read of the record decides (ours: written; absent: the
 *      invocation ends and the wake is retried, the step runs again from the journal's view).
 *
 * `requestId` is the journal id (the incarnation), the step id, the attempt and the invocation:
 * the same for every resend of one request, different for anything that sends other parameters
 * (a later attempt, or another invocation, whose record is stamped anew), which DynamoDB would
 * otherwise refuse within the window as `IdempotentParameterMismatch`.
 */
import { type StoredRecord, type TransactResult, canTransact } from "../../ports.ts";
import { isRetryable } from "../error-codec.ts";
import { WaymarkError } from "../errors.ts";
import { type JournalRecord, keyOf, parseRecord, type RunStepRecord } from "../records.ts";
import { sameBody } from "../retried-writes.ts";
import { TransactUnsupportedError } from "../transact/errors.ts";
import type { TxOp } from "../transact/ops.ts";
import type { Grant } from "./leases.ts";
import type { RunPorts } from "./ports.ts";

/** A transaction's answer: as an append's (`record`, `won`), or the user's item whose condition failed. */
export type Transacted = { record: JournalRecord; won: boolean } | { refused: { index: number; reason: string } };

/** The request id of one transaction: see the header. */
export function transactRequestId(journalId: string, record: RunStepRecord): string {
  return `${journalId}/${record.stepId}#${record.attempts}@${record.inv ?? 0}`;
}

export async function transact(p: RunPorts, g: Pick<Grant, "runId" | "journalId">, record: RunStepRecord, ops: readonly TxOp[]): Promise<Transacted> {
  const store = p.store;
  if (!canTransact(store)) throw new TransactUnsupportedError(record.stepId);
  const stored: StoredRecord = { key: keyOf(record), body: record };
  const requestId = transactRequestId(g.journalId, record);
  const send = () => store.transactRecord(g.journalId, stored, ops, requestId);
  let res: TransactResult;
  try {
    res = await send();
  } catch (first) {
    if (answered(first)) throw first;
    try {
      res = await send();
    } catch (second) {
      if (answered(second)) throw second;
      const existing = await store.getRecord(g.journalId, stored.key).catch(() => undefined);
      if (!existing) throw second;
      res = sameBody(existing.body, record) ? { written: true } : { written: false, existing };
    }
  }
  if (res.written) return { record, won: true };
  if ("refused" in res) return { refused: res.refused };
  return { record: parseRecord(g.runId, stored.key, res.existing.body), won: false };
}

/** A modelled answer of the store (a conflict to retry by policy, a refusal): not a lost response. */
function answered(err: unknown): boolean {
  return err instanceof WaymarkError && (err.name.startsWith("Transact") || err.name === "UnsupportedExpressionError" || !isRetryable(err));
}
