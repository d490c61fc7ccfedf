/**
 * The errors of `step.transact`. Each has a literal `name` and says whether retrying can help;
 * a transaction's failure is journaled once as the step's failure and thrown as the same class
 * live and on replay.
 */
import { WaymarkError } from "../errors.ts";

/**
 * A condition of one of the step's items did not hold (`condition` of a put, update, delete or
 * condition check): the whole transaction was cancelled and nothing was written. Not retryable:
 * the step fails once with it, recorded; a replay throws it again without sending anything.
 *
 * @example
 * ```ts
 * try {
 *   await step.transact("reserve", (tx) => {
 *     tx.update({ table: "stock", key: { sku }, update: "SET available = available - :n", condition: "available >= :n", values: { ":n": qty } });
 *   });
 * } catch (err) {
 *   if (err instanceof TransactConditionFailedError) return { status: "out-of-stock", table: err.table };
 *   throw err;
 * }
 * ```
 */
export class TransactConditionFailedError extends WaymarkError {
  override readonly name = "TransactConditionFailedError" as const;
  readonly retryable = false;
  constructor(
    readonly stepId: string,
    /** The item's position among the step's own writes (0 for the first `tx.*` call). */
    readonly index: number,
    readonly table: string,
    /** `put`, `update`, `delete` or `conditionCheck`. */
    readonly op: string,
    /** The cancellation reason's code (`ConditionalCheckFailed`). */
    readonly reason: string,
    /** The item's key (a put's whole item is not repeated here), when known. */
    readonly key?: Readonly<Record<string, unknown>>,
  ) {
    super(`step "${stepId}": the condition of item ${index} (${op} on table "${table}") failed (${reason}); nothing was written`);
  }
}

/**
 * The step's writes cannot be sent as one transaction: too many items, too large, two writes to
 * one key, a write to the journal's own table, an expression that names an unknown placeholder…
 * Checked before anything is written, and nothing is. Not retryable: the code must change.
 *
 * @example
 * ```ts
 * try {
 *   await step.transact("reserve", (tx) => tx.update({ table: "stock", key: { sku }, update: "SET n = :n" })); // no :n given
 * } catch (err) {
 *   if (err instanceof TransactValidationError) console.error(err.problem);
 * }
 * ```
 */
export class TransactValidationError extends WaymarkError {
  override readonly name = "TransactValidationError" as const;
  readonly retryable = false;
  constructor(
    readonly stepId: string,
    readonly problem: string,
  ) {
    super(`step "${stepId}": the transaction was refused before anything was written: ${problem}`);
  }
}

/**
 * The local and testing runtimes evaluate a subset of DynamoDB's expression language; this
 * expression is outside it (a function, clause or operator the emulator does not implement).
 * Nothing was written. DynamoDB itself accepts the whole language: this refusal is the
 * emulator's, so code tested locally never depends on a guess.
 */
export class UnsupportedExpressionError extends WaymarkError {
  override readonly name = "UnsupportedExpressionError" as const;
  readonly retryable = false;
  constructor(
    readonly expression: string,
    readonly problem: string,
  ) {
    super(`the local DynamoDB emulator does not evaluate "${expression}": ${problem} (supported: attribute_exists, attribute_not_exists, begins_with, = <> < <= > >=, AND, OR, NOT, parentheses; SET with + - and if_not_exists, REMOVE, ADD of numbers)`);
  }
}

/**
 * The transaction was cancelled by a conflict with another transaction or by throttling
 * (`TransactionConflict`, `ThrottlingError`, `ProvisionedThroughputExceeded`): nothing was
 * written, and trying again can succeed. Retried by the step's retry policy.
 */
export class TransactConflictError extends WaymarkError {
  override readonly name = "TransactConflictError" as const;
  readonly retryable = true;
  constructor(
    readonly stepId: string,
    /** The cancellation reasons' codes, item by item (`None` for items that were fine). */
    readonly reasons: readonly string[],
  ) {
    super(`step "${stepId}": the transaction was cancelled (${reasons.filter((r) => r !== "None").join(", ") || "conflict"}); nothing was written, it will be retried`);
  }
}

/** This runtime's journal store cannot commit a step's writes with its record (a store without `transactRecord`). */
export class TransactUnsupportedError extends WaymarkError {
  override readonly name = "TransactUnsupportedError" as const;
  readonly retryable = false;
  constructor(readonly stepId: string) {
    super(`step "${stepId}": step.transact needs a journal store that commits the user's writes with the step's record (DynamoDB, SQLite, or the test runtime's memory store)`);
  }
}
