/**
 * The production journal store: one DynamoDB table (layout in `table-definition.ts`).
 *
 * Every rule of the contract is one conditional request, and the hot path has no transaction:
 *
 *   createRun      PutItem  if absent (or its TTL passed)      after one Query of the partition: the
 *                                                              meta item, and any earlier life's records
 *                                                              (none at all: marked `emptyJournal`, and
 *                                                              the first grant says so: no Query then)
 *   appendRecord   PutItem  if attribute_not_exists(pk)       the loser gets the winner's record
 *                                                              back in the same response (ALL_OLD)
 *   acquireLease   UpdateItem on meta  if not finished AND (no lease OR lease expired OR
 *                  lease token = ifToken); the token grows by one (ALL_OLD on refusal says why)
 *   renew/release  UpdateItem on meta  if lease held AND token = mine AND not finished
 *   finishRun      UpdateItem on meta  if not finished [AND lease held AND token = mine]
 *
 * A race, told as a timeline (two invocations of one run, a duplicate wake):
 *
 *   A: PutItem step#charge (absent)   -> written
 *   B: PutItem step#charge (present)  -> ConditionalCheckFailed + A's item -> B adopts A's result
 *
 * `ConditionalCheckFailedException` is an answer, never an error; transient errors are retried
 * (see `dynamodb-client.ts`).
 *
 * Retention: finished runs get `expiresAt` (TTL) on their meta item only; the table's TTL deletes
 * it for free, and the stream handler (`retention-stream.ts`) deletes the run's other items
 * through {@link DynamoJournalStore.purgeRun}. `purgeExpired` does both without TTL (see
 * `dynamodb-retention.ts`). If a run id is reused before the stream caught up, `createRun`
 * sweeps the predecessor's records before it writes the new meta item (`dynamodb-create.ts`).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  type AcquireRequest,
  type AppendResult,
  type ContinueUpdate,
  type FinishUpdate,
  type Journal,
  type JournalStore,
  type ListQuery,
  type MarkDueResult,
  type NewRun,
  type PurgedRun,
  type QueuedRun,
  type RunMeta,
  type RunPage,
  type SlotEntry,
  type SlotHolder,
  type StoredRecord,
  type SuspendUpdate,
  type TransactResult,
  type TransactStore,
} from "../ports.ts";
import type { TxOp } from "../core/transact/ops.ts";
import { transactRecord } from "./dynamodb-transact.ts";
import { type Applied, type Granted, JournalStoreBase, type Released } from "../core/journal-base.ts";
import { TERMINAL_STATUSES as TERMINAL } from "../ports.ts";
import { ATTR, META_SK, decodeMeta, decodeRecord, itemSize, pkOf, recordItem, s, toJson, writeStamp, type Item } from "./dynamodb-codec.ts";
import { retryConflicts } from "./dynamodb-client.ts";
import { listDueRuns, listRuns } from "./dynamodb-lists.ts";
import { acquireUpdate, continueUpdate, finishUpdate, renewUpdate, type MetaUpdate } from "./dynamodb-transitions.ts";
import { markDue, releaseMarked } from "./dynamodb-due.ts";
import { sameBody } from "../core/retried-writes.ts";
import { conditionFailed, DYNAMODB_ITEM_LIMIT_BYTES, RecordTooLargeError, sizeRefusal } from "./errors.ts";
import { dynamodbSdk } from "./sdk.ts";
import * as flow from "./dynamodb-flow.ts";
import { loadJournal } from "./dynamodb-journal.ts";
import { deleteExpiredMeta, deleteRunRecords, findExpiredRuns, type ExpiredRun, type ExpiredRunHook } from "./dynamodb-retention.ts";
import { createRun } from "./dynamodb-create.ts";

/** Options of `DynamoJournalStore`: the client, the table, retention, and the hook run before an expired run's records go. */
export interface DynamoJournalStoreOptions {
  /** A configured client; `createJournalDynamoClient()` gives one with the journal's retry settings. */
  client: DynamoDBClient;
  tableName: string;
  /** How long a finished run stays before TTL removes it. Default 30 days. */
  retentionDays?: number;
  /**
   * Called for each expired run before its records are deleted (by the stream handler or by
   * `purgeExpired`): where a `PayloadStore` deletes the run's objects. Must be idempotent.
   */
  onRunExpired?: ExpiredRunHook;
}

const DAY_S = 86_400;

/**
 * A {@link JournalStore} on one DynamoDB table.
 *
 * @example
 * ```ts
 * const store = new DynamoJournalStore({ client: await createJournalDynamoClient(), tableName: "waymark-journal" });
 * await store.createRun({ runId: "order-1", workflow: "order-flow", input: { sku: "A1" }, createdAt: Date.now() });
 * const res = await store.appendRecord("order-1", { key: "step#charge", body: { v: 1 } });
 * if (!res.written) console.log("already recorded:", res.existing.body);
 * ```
 */
export class DynamoJournalStore extends JournalStoreBase implements JournalStore, TransactStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly retentionS: number;
  private readonly onRunExpired: ExpiredRunHook | undefined;

  constructor(options: DynamoJournalStoreOptions) {
    super();
    this.client = options.client;
    this.table = options.tableName;
    this.retentionS = Math.round((options.retentionDays ?? 30) * DAY_S);
    this.onRunExpired = options.onRunExpired;
  }

  /** Creates the run if absent, else returns the existing run unchanged (`created: false`): one query of the run id's partition, then a conditional put (dynamodb-create.ts). */
  createRun(run: NewRun): Promise<{ created: boolean; run: RunMeta }> {
    return createRun(this.client, this.table, run);
  }

  async getRun(runId: string): Promise<RunMeta | undefined> {
    const { GetItemCommand } = await dynamodbSdk();
    const out = await retryConflicts(() => this.client.send(new GetItemCommand({ TableName: this.table, Key: metaKey(runId), ConsistentRead: true })));
    return out.Item && decodeMeta(out.Item);
  }

  /** The meta item and the current (or asked-for) incarnation's records (dynamodb-journal.ts). */
  loadJournal(runId: string, options: { incarnation?: number } = {}): Promise<Journal | undefined> {
    return loadJournal(this.client, this.table, runId, options.incarnation);
  }

  protected continueWith(runId: string, token: number, update: ContinueUpdate): Promise<Applied> {
    return this.applied(this.update(runId, continueUpdate(runId, token, update)));
  }

  protected async grant(runId: string, req: AcquireRequest): Promise<Granted> {
    try {
      const item = (await this.update(runId, acquireUpdate(runId, req), true)) ?? {};
      const run = decodeMeta(item);
      const granted: Granted = { applied: true, lease: { owner: req.owner, token: run.leaseToken, expiresAt: req.now + req.ttlMs }, run };
      // The first grant of a run created with an empty journal that no one marked since (dynamodb-create.ts).
      if (item[ATTR.emptyJournal]?.BOOL === true && run.invocations === 1 && (run.incarnation ?? 1) === 1) granted.emptyJournal = true;
      return granted;
    } catch (err) {
      if (!conditionFailed(err)) throw err;
      return { applied: false, run: err.Item ? decodeMeta(err.Item) : undefined };
    }
  }

  async renewLease(runId: string, token: number, now: number, ttlMs: number): Promise<boolean> {
    const res = await this.applied(this.update(runId, renewUpdate(runId, token, now, ttlMs)));
    if (res.applied) return true;
    // Refused only because a later renewal of this same lease got there first: still ours.
    const run = res.run;
    return run?.lease?.token === token && run.leaseToken === token && !TERMINAL.has(run.status) && run.lease.expiresAt > now + ttlMs;
  }

  protected release(runId: string, token: number, update: SuspendUpdate): Promise<Released> {
    return releaseMarked((u) => this.applied(this.update(runId, u)), runId, token, update);
  }

  protected finish(runId: string, update: FinishUpdate): Promise<Applied> {
    const size = Buffer.byteLength(toJson(update.result) ?? "", "utf8") + Buffer.byteLength(toJson(update.error) ?? "", "utf8");
    const write = this.update(runId, finishUpdate(runId, update, this.retentionS)).catch((err: unknown) => {
      throw sizeRefusal(err, runId, META_SK, size);
    });
    return this.applied(write);
  }

  async getRecord(runId: string, key: string): Promise<StoredRecord | undefined> {
    const { GetItemCommand } = await dynamodbSdk();
    const out = await retryConflicts(() => this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: s(pkOf(runId)), sk: s(key) }, ConsistentRead: true })));
    return out.Item && decodeRecord(out.Item);
  }

  async appendRecord(runId: string, record: StoredRecord, probe?: string): Promise<AppendResult> {
    // The probe is a read of its own here: sent beside the write, so it costs no time.
    const probing = probe === undefined ? undefined : this.getRecord(runId, probe);
    const written = await this.put(runId, record);
    if (!probing) return written;
    return { ...written, probed: (await probing) ?? null };
  }

  private async put(runId: string, record: StoredRecord): Promise<AppendResult> {
    const { PutItemCommand } = await dynamodbSdk();
    const item = recordItem(runId, record, writeStamp());
    const size = itemSize(item);
    if (size > DYNAMODB_ITEM_LIMIT_BYTES) throw new RecordTooLargeError(runId, record.key, size);
    try {
      await retryConflicts(() => this.client.send(new PutItemCommand({
        TableName: this.table,
        Item: item,
        ConditionExpression: "attribute_not_exists(pk)",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      })));
      return { written: true };
    } catch (err) {
      if (conditionFailed(err) && err.Item) {
        const existing = decodeRecord(err.Item);
        // A retried append whose first attempt was applied finds its own body: written.
        return sameBody(existing.body, record.body) ? { written: true } : { written: false, existing };
      }
      throw sizeRefusal(err, runId, record.key, size);
    }
  }

  /** `step.transact`: the user's writes and the record in one `TransactWriteItems` (dynamodb-transact.ts). */
  transactRecord(runId: string, record: StoredRecord, ops: readonly TxOp[], requestId: string): Promise<TransactResult> {
    return transactRecord(this.client, this.table, runId, record, ops, requestId);
  }

  async markLate(runId: string, key: string, waitStepId: string): Promise<void> {
    const { UpdateItemCommand } = await dynamodbSdk();
    await this.applied(retryConflicts(() => this.client.send(new UpdateItemCommand({
      TableName: this.table,
      Key: { pk: s(pkOf(runId)), sk: s(key) },
      UpdateExpression: "SET #late = :late",
      ConditionExpression: "attribute_exists(pk)", // never create a stub record
      ExpressionAttributeNames: { "#late": ATTR.lateFor },
      ExpressionAttributeValues: { ":late": s(waitStepId) },
    }))));
  }

  /** Removes the meta item's `emptyJournal` mark, if it has one: one conditional `UpdateItem` (refused: nothing to do). */
  async markJournaled(runId: string): Promise<void> {
    const { UpdateItemCommand } = await dynamodbSdk();
    await this.applied(retryConflicts(() => this.client.send(new UpdateItemCommand({
      TableName: this.table,
      Key: metaKey(runId),
      UpdateExpression: "REMOVE #e",
      ConditionExpression: "attribute_exists(#e)", // never creates a stub meta item
      ExpressionAttributeNames: { "#e": ATTR.emptyJournal },
    }))));
  }

  markDue(runId: string, at: number, leased?: { token: number }): Promise<MarkDueResult> {
    return markDue((u) => this.applied(this.update(runId, u)), runId, at, leased);
  }

  slots(scope: string): Promise<SlotEntry[]> {
    return flow.slots(this.client, this.table, scope);
  }

  protected putSlot(scope: string, index: number, holder: SlotHolder, now: number): Promise<boolean> {
    return flow.putSlot(this.client, this.table, scope, index, holder, now);
  }

  protected deleteSlot(scope: string, index: number, runId: string): Promise<void> {
    return flow.deleteSlot(this.client, this.table, scope, index, runId);
  }

  enqueue(scope: string, runId: string, at: number): Promise<void> {
    return flow.enqueue(this.client, this.table, scope, runId, at);
  }

  protected async removeQueued(scope: string, run: QueuedRun): Promise<boolean> {
    return (await flow.dequeueRun(this.client, this.table, scope, run)) !== undefined;
  }

  peek(scope: string): Promise<QueuedRun | undefined> {
    return flow.peek(this.client, this.table, scope);
  }

  markLatest(scope: string, runId: string, at: number): Promise<void> {
    return flow.markLatest(this.client, this.table, scope, runId, at);
  }

  latest(scope: string): Promise<string | undefined> {
    return flow.latest(this.client, this.table, scope);
  }

  listRuns(query: ListQuery): Promise<RunPage> {
    return listRuns(this.client, this.table, query);
  }

  listDueRuns(now: number, limit: number): Promise<RunMeta[]> {
    return listDueRuns(this.client, this.table, now, limit);
  }

  /**
   * Deletes finished runs past their TTL with every item, without waiting for TTL: the hook,
   * the records, then the meta item (conditional on that incarnation and its TTL), so a purge
   * cut short is finished by the next. Returns the runs whose meta item this call deleted.
   * Reads the `byStatus` index (eventually consistent): a run finished a moment ago may wait
   * for the next sweep. Production relies on TTL and the stream; this is the explicit sweep.
   */
  async purgeExpired(now: number, limit: number): Promise<PurgedRun[]> {
    const expired = await findExpiredRuns(this.client, this.table, now, this.retentionS * 1000, limit);
    const purged: PurgedRun[] = [];
    for (const run of expired) {
      await this.purgeRun(run);
      if (await deleteExpiredMeta(this.client, this.table, run, now)) purged.push({ runId: run.runId, createdAt: run.createdAt });
    }
    return purged;
  }

  /**
   * Deletes an expired run's records (after its `onRunExpired` hook), leaving any meta item:
   * what the stream handler calls once TTL has removed the meta. Records of a newer run with the
   * same id are never touched. Idempotent.
   *
   * @example
   * ```ts
   * // a REMOVE of a meta item by TTL, its old image decoded
   * await store.purgeRun({ runId: "order-1", createdAt: 1_700_000_000_000, expiresAt: 1_702_592_000 });
   * ```
   */
  async purgeRun(run: ExpiredRun): Promise<{ deleted: number; kept: number }> {
    await this.onRunExpired?.({ runId: run.runId, createdAt: run.createdAt });
    return deleteRunRecords(this.client, this.table, run);
  }

  private async update(runId: string, { update: u, condition }: MetaUpdate, returnNew = false): Promise<Item | undefined> {
    const { UpdateItemCommand } = await dynamodbSdk();
    const out = await retryConflicts(() => this.client.send(new UpdateItemCommand({
      TableName: this.table,
      Key: metaKey(runId),
      UpdateExpression: u.expression,
      ConditionExpression: condition,
      ExpressionAttributeNames: u.names,
      ExpressionAttributeValues: u.values,
      ReturnValues: returnNew ? "ALL_NEW" : "NONE",
      // The item as it was tells a refusal from a retry that finds its own first attempt applied.
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    })));
    return out.Attributes;
  }

  /** A conditional write's answer: applied, or refused with the item as it was (ReturnValuesOnConditionCheckFailure). */
  private async applied(write: Promise<unknown>): Promise<Applied> {
    try {
      await write;
      return { applied: true };
    } catch (err) {
      if (conditionFailed(err)) return { applied: false, run: err.Item ? decodeMeta(err.Item) : undefined };
      throw err;
    }
  }
}

function metaKey(runId: string): Item {
  return { pk: s(pkOf(runId)), sk: s(META_SK) };
}

