/**
 * `waymark`: define durable workflows and talk to their runs.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { durable } from "waymark";
 *
 * export const chargeFlow = durable({ name: "charge-flow", input: z.object({ orderId: z.string() }) },
 *   async ({ orderId }, step) => {
 *     const charge = await step.run("charge_card", ({ idempotencyKey }) => payments.charge(orderId, idempotencyKey));
 *     await step.run("send_receipt", () => mailer.receipt(orderId, charge));
 *     return charge;
 *   });
 * ```
 */
export { durable, type DurableWorkflow, type DurableLambdaContext, type DurableHandlerOptions } from "./durable.ts";
export { defineWorkflow } from "./core/definition.ts";
export type {
  AnyWorkflow,
  DurableOptions,
  SignalMap,
  Step,
  StepRunContext,
  StepRunOptions,
  WaitOptions,
  WaitResult,
  SignalSender,
  ApprovalLink,
  Workflow,
  WorkflowFn,
  StepLog,
  LogAttributes,
} from "./core/definition.ts";
export type { StandardSchemaV1 } from "./core/standard-schema.ts";
export type { Duration } from "./core/duration.ts";
export type { Saga } from "./core/saga.ts";
export type { ChildOptions, ChildOutcome, ChildEnd, ChildStart, ParentRef, RemoteChildren } from "./core/children.ts";
export type { ItemStep, MapFn, MapOptions, MapOutcome, ParallelOptions } from "./core/fan-out.ts";
export { parseDuration } from "./core/duration.ts";
export * from "./core/errors.ts";
export { TransactConditionFailedError, TransactConflictError, TransactUnsupportedError, TransactValidationError, UnsupportedExpressionError } from "./core/transact/errors.ts";
export type { Transaction, TxConditionCheck, TxDelete, TxItem, TxKey, TxOp, TxPut, TxUpdate, TxValue } from "./core/transact/ops.ts";
export type { TableKeys } from "./core/transact/emulate.ts";
export { TRANSACT_MAX_BYTES, TRANSACT_MAX_ITEMS, TRANSACT_WAYMARK_ITEMS } from "./core/transact/validate.ts";
export { MissingDependencyError } from "./missing-dependency.ts";
export { JournalLimitError, DEFAULT_JOURNAL_LIMITS, type JournalLimits } from "./core/journal-limits.ts";
export { journalIdOf } from "./core/run/journal-ids.ts";
export { serializeError, deserializeError, isRetryable, RecordedError } from "./core/error-codec.ts";
export type { RetryOptions } from "./core/retry.ts";
export { Engine, type EngineHooks, type EngineOptions, type InvocationResult, type InvokeOptions, type LogEntry } from "./core/engine.ts";
export type { AttemptHook, AttemptInfo, StepEvent } from "./core/execution.ts";
export * from "./observe/index.ts";
export { createRegistry, type Registry } from "./core/registry.ts";
export { Client, createClient, type CancelAnswer, type ClientOptions, type HistoryEntry, type SignalOptions, type SignalReceipt, type StartOptions, type StartResult } from "./client.ts";
export {
  RunFailedError,
  RunNotFinishedError,
  WorkflowMismatchError,
  type ResultOptions,
  type RunHandle,
  type RunOf,
  type SignalName,
  type SignalPayload,
  type WorkflowInput,
  type WorkflowResult,
  type WorkflowSignals,
} from "./run-handle.ts";
export type * from "./ports.ts";
export { RUN_STATUSES, systemClock, TERMINAL_STATUSES } from "./ports.ts";
export type { JournalRecord, StepRecord, SignalRecord, ResolutionRecord, AttemptRecord } from "./core/records.ts";
export {
  DEFAULT_INLINE_PAYLOAD_BYTES,
  DEFAULT_MAX_PAYLOAD_BYTES,
  PayloadIntegrityError,
  PayloadMissingError,
  payloadKey,
  runPayloadPrefix,
  type PayloadOptions,
} from "./core/payloads.ts";
