/**
 * The store's optional transaction role, behind `step.transact` (part of the ports, `lib/ports.ts`).
 */
import type { TxOp } from "../core/transact/ops.ts";
import type { StoredRecord } from "../ports.ts";

/**
 * A step's answer from {@link TransactStore.transactRecord}: written (the user's writes and the
 * record, together; also a retry that finds its own record), the journal already holding another
 * record under that key (nothing written), or an item of the user's whose condition failed
 * (nothing written).
 */
export type TransactResult =
  | { written: true }
  | { written: false; existing: StoredRecord }
  | { written: false; refused: { index: number; reason: string } };

/**
 * `step.transact`: the user's writes to their own tables and a step's record, committed in one
 * transaction — DynamoDB's `TransactWriteItems` on AWS, one SQLite transaction locally, one
 * synchronous change in memory. The record is write-once as in `appendRecord`. Transient
 * refusals (a conflict, throttling) throw `TransactConflictError`; a request the store refuses
 * before writing throws `TransactValidationError`. Optional: a store without it cannot host
 * `step.transact`.
 */
export interface TransactStore {
  /**
   * `requestId` is the same for every retry of one request (and only for it): DynamoDB derives
   * its `ClientRequestToken` from it, so a retry within its idempotency window is answered as
   * the first attempt's success.
   */
  transactRecord(journalId: string, record: StoredRecord, ops: readonly TxOp[], requestId: string): Promise<TransactResult>;
}

/** Whether `store` can commit a step's writes with its record. */
export function canTransact(store: object): store is TransactStore {
  return typeof (store as Partial<TransactStore>).transactRecord === "function";
}
