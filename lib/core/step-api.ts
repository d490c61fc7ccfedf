/**
 * The step API: what a workflow's code receives and calls (`step.run`, `step.sleep`,
 * `step.waitForSignal`, …), with the options and results of each. The workflow definition that
 * hosts it (`durable()`'s options, `Workflow`) is in definition.ts.
 */
import type { StandardSchemaV1 } from "./standard-schema.ts";
import type { Duration } from "./duration.ts";
import type { StepInterruptedError } from "./errors.ts";
import type { SignalSender } from "./records.ts";
import type { ItemStep, MapFn, MapOptions, MapOutcome, ParallelOptions } from "./fan-out.ts";
import type { Saga } from "./saga.ts";
import type { ChildOptions } from "./children.ts";
import type { RetryOptions } from "./retry.ts";
import type { Workflow } from "./definition.ts";
import type { Transaction } from "./transact/ops.ts";

/** Signals a workflow accepts, by name, each with the schema its payload must pass (zod, zod/mini or any Standard Schema library). */
export type SignalMap = Record<string, StandardSchemaV1>;

/** What a step's function receives. */
export interface StepRunContext {
  /** `<runId>/<stepId>`: stable across attempts and replays. Pass it to the provider. */
  idempotencyKey: string;
  /** 1 for the first attempt. */
  attempt: number;
  /**
   * Fires when the attempt's `timeout` passes or the run is cancelled. Made when first read (a
   * getter, not a copied field): pass `ctx.signal` itself, not a spread of the context.
   */
  readonly signal: AbortSignal;
}

/**
 * Options of one `step.run`: its retries, per-attempt timeout and at-least-once or at-most-once
 * semantics.
 */
export interface StepRunOptions {
  /** Retry policy for this step, or a number of attempts. Defaults to the workflow's. */
  retries?: RetryOptions | number;
  /** Per-attempt time limit; a timed-out attempt is a failed attempt. */
  timeout?: Duration;
  /**
   * `at-least-once` (the default): a body interrupted by a crash runs again on the next
   * invocation, with the same idempotency key; no extra write. `at-most-once`: a journaled marker
   * is written before each attempt's body (one extra write), and a replay that finds a started,
   * unfinished attempt throws {@link StepInterruptedError} into the workflow instead of running
   * the body again. For side effects the provider cannot deduplicate.
   *
   * @example
   * ```ts
   * await step.run("send_sms", () => sms.send(phone, text), { semantics: "at-most-once" });
   * ```
   */
  semantics?: "at-least-once" | "at-most-once";
  /**
   * A compensation: it runs after the run's cancellation was delivered. Once a cancellation is
   * delivered, every other step (and sleep, and wait) fails at once with `CancelledError`, so a
   * branch still running forward stops at its next step; `saga.compensate()` marks its steps so.
   *
   * @example
   * ```ts
   * } catch (err) {
   *   if (err instanceof CancelledError) await step.run("refund", refundFn, { compensation: true });
   *   throw err;
   * }
   * ```
   */
  compensation?: boolean;
}

/**
 * What `waitForSignal` resolves to. `sender` is who sent the signal: `verified` when it came
 * through a link minted for that approver (`approvers`), `verified: false` when the approval
 * body only named them; absent when nobody was named.
 */
export type WaitResult<T> = { received: true; payload: T; signalId: string; sender?: SignalSender } | { received: false };


/**
 * Options of `step.waitForSignal`: the timeout, the approver's summary, `notify` (a capability
 * link for a person) and named `approvers`.
 */
export interface WaitOptions {
  /** Give up after this long: the wait then resolves to `{ received: false }`. */
  timeout?: Duration;
  /**
   * Runs once, as a journaled step (`<waitId>:notify`), before the run suspends, with a
   * capability link bound to this wait: send it to the approver by mail or chat. Needs the
   * runtime to be configured with a webhook secret.
   */
  notify?: (link: ApprovalLink) => Promise<unknown> | unknown;
  /**
   * Mint one link per named approver instead of one link for anyone: `notify` is called once
   * per approver, in this order, each time with that approver's link (inside the one journaled
   * notify step, so a retry of that step calls it again for each: deduplicate on
   * `runId/waitId/approver`). A signal through a link is recorded as sent by its approver
   * (`sender: { id, verified: true }`); the first link used decides the wait.
   *
   * @example
   * ```ts
   * const ok = await step.waitForSignal("approval", {
   *   approvers: ["ana@shop.test", "ben@shop.test"],
   *   notify: (link) => mailer.send(link.approver!, link.url),
   * });
   * if (ok.received && ok.sender?.verified) log(`approved by ${ok.sender.id}`);
   * ```
   */
  approvers?: readonly string[];
  /**
   * What is being decided, in a few words for a human (at most 2000 characters): journaled with
   * the wait and shown on the approver's page instead of the run's input. Derive it from the
   * input or earlier steps, so every replay computes the same text.
   *
   * @example
   * ```ts
   * await step.waitForSignal("approval", { summary: `Order ${order.orderId}: ${order.quantity} × ${order.sku}, ${order.amount} EUR`, notify });
   * ```
   */
  summary?: string;
}

/** A single-use capability to resolve one wait, for a human approver. */
export interface ApprovalLink {
  runId: string;
  waitId: string;
  /** Unguessable and signed; bound to the run (this incarnation of its id), the wait, the approver and expiry. */
  token: string;
  /** The full URL when the runtime knows its public base URL. */
  url: string | undefined;
  /** Every link expires: at the wait's timeout, or its maximum lifetime (default 7 days) if sooner. */
  expiresAt: number;
  /** The approver this link is for, when the wait named `approvers`. */
  approver?: string;
}

/** Extra keys of a log line: flat JSON values, merged into the line next to Waymark's own. */
export type LogAttributes = Readonly<Record<string, unknown>>;

/**
 * A workflow's logger, replay-aware: a line is written when the code reaches it for the first
 * time, not again when a later invocation replays the same code to get back to where it was.
 * Lines carry the run id and the step the code last reached (`stepId`).
 *
 * @example
 * ```ts
 * const hold = await step.run("reserve", () => inventory.reserve(order.sku));
 * step.log.info("reserved", { sku: order.sku, holdId: hold.id }); // once, however often the run replays
 * ```
 */
export interface StepLog {
  info(message: string, attributes?: LogAttributes): void;
  warn(message: string, attributes?: LogAttributes): void;
  error(message: string, attributes?: LogAttributes): void;
}

/**
 * The step API a workflow receives. Every call is journaled (or derived deterministically), so
 * the workflow's code re-runs from the top on every invocation and arrives at the same place.
 */
export interface Step<S extends SignalMap = SignalMap, I = unknown> {
  /** The run's id. */
  readonly runId: string;
  /**
   * Runs `fn` once per run: its result is journaled and returned from the journal on replay.
   * The n-th use of a name is `name#n`.
   *
   * @example
   * ```ts
   * const charge = await step.run("charge", ({ idempotencyKey }) =>
   *   payments.charge(order.id, order.amount, { idempotencyKey }));
   * ```
   */
  run<T>(name: string, fn: (ctx: StepRunContext) => Promise<T> | T, options?: StepRunOptions): Promise<T>;
  /**
   * Writes to your own DynamoDB tables exactly once: the writes `body` builds on `tx` (puts,
   * updates, deletes, condition checks, as in `TransactWriteItems`) and this step's journal
   * record commit in ONE transaction, so whatever crashes, duplicate wakes or lost responses
   * occur they happen once, and a replay returns the recorded result without writing. On AWS
   * that is one `TransactWriteItems` (twice the write units of plain writes; at most 99 of your
   * items, 4 MB; the journal table and yours in one account and Region); locally and in tests,
   * emulated tables in the same store (declare them in the runtime's `tables`).
   *
   * A failed condition cancels everything and fails the step, once and recorded, with
   * `TransactConditionFailedError` (which item, why); a conflict or throttling is retried by the
   * step's policy; a bad transaction (too many items, two writes to one key, an unknown
   * placeholder) fails with `TransactValidationError` and writes nothing. The body may read
   * (reads are not part of the transaction), but must return the same result for the same
   * reads; its writes are sent after it returns. See docs/guides/transact.md.
   *
   * @example
   * ```ts
   * const line = await step.transact("reserve", (tx) => {
   *   tx.update({ table: "stock", key: { sku }, update: "SET available = available - :n", condition: "available >= :n", values: { ":n": qty } });
   *   tx.put({ table: "ledger", item: { pk: orderId, sk: "reserve", qty }, condition: "attribute_not_exists(pk)" });
   *   return { reserved: qty };
   * });
   * ```
   */
  transact<T>(name: string, body: (tx: Transaction, ctx: StepRunContext) => Promise<T> | T, options?: Pick<StepRunOptions, "retries" | "timeout">): Promise<T>;
  /** A durable timer: the run suspends and is woken after `duration`. */
  sleep(name: string, duration: Duration): Promise<void>;
  /** A durable timer until a moment. */
  sleepUntil(name: string, until: Date | number): Promise<void>;
  /**
   * Suspends until the signal `name` arrives (or was buffered before), or the timeout passes.
   *
   * @example
   * ```ts
   * const approval = await step.waitForSignal("approval", { timeout: "24h" });
   * if (!approval.received || !approval.payload.approved) return cancel();
   * ```
   */
  waitForSignal<K extends keyof S & string>(name: K, options?: WaitOptions): Promise<WaitResult<StandardSchemaV1.InferOutput<S[K]>>>;
  /**
   * Versioning of in-flight runs: true for runs that reach this point under code that has the
   * patch, false for runs whose journal had already passed this point under older code. The
   * answer is journaled (riding on the next record, no extra write), so every replay decides the
   * same way. Once no run that took the old path is left, replace the call with
   * `deprecatePatch(id)`, and remove that in a later release.
   *
   * @example
   * ```ts
   * if (step.patched("fraud-check")) await step.run("fraud_check", () => fraud.score(order));
   * const charge = await step.run("charge", chargeFn);
   * ```
   */
  patched(id: string): boolean;
  /**
   * The clean-up release of `patched(id)`: the new path is now the only one. A run that recorded
   * taking the old path fails with `NonDeterminismError` here, loudly, instead of replaying a
   * story the code no longer tells.
   */
  deprecatePatch(id: string): void;
  /**
   * Ends this incarnation of the run and starts the same run id afresh with `input` (validated
   * like a start's): a new journal, so a run that loops for ever keeps its history bounded. Steps
   * still running finish and are recorded first; unconsumed signals move to the new incarnation.
   * The old journal is kept for inspection (`client.history(runId, { incarnation })`) until
   * retention. Never returns.
   *
   * @example
   * ```ts
   * for (let i = 0; i < 1_000; i++) await step.run(`poll`, () => feed.poll(cursor));
   * return step.continueAsNew({ cursor: nextCursor });
   * ```
   */
  continueAsNew(input: I): Promise<never>;
  /**
   * Runs `fn` for every item, each in a durable sub-context: the item's `step` has every
   * operation (run, sleep, waitForSignal, invoke, a nested map…), journaled under the item's
   * scope (`<name>[<index>]/…`) and replayed exactly. At most `concurrency` items run at once
   * (default 10); an item asleep, waiting for a signal or for a retry frees its slot unless
   * `holdSlotWhileWaiting`; an item waiting for a child it invoked keeps it (so `concurrency`
   * bounds the children running at once).
   * Results in item order; failures fail-fast (the lowest index's) or `collect`ed.
   *
   * @example
   * ```ts
   * const receipts = await step.map("pay-suppliers", invoices, async (invoice, step) => {
   *   const ok = await step.waitForSignal("approval", { timeout: "3d" });
   *   if (!ok.received) return "expired";
   *   return step.invoke("pay", paymentFlow, { input: invoice });
   * }, { concurrency: 5 });
   * ```
   */
  map<T, R>(name: string, items: readonly T[], fn: MapFn<T, R, S>, options?: MapOptions & { failures?: "fail-fast" }): Promise<R[]>;
  map<T, R>(name: string, items: readonly T[], fn: MapFn<T, R, S>, options: MapOptions & { failures: "collect" }): Promise<Array<MapOutcome<R>>>;
  /**
   * Runs named branches side by side, each in a durable sub-context (`<name>[<branch>]/…`), with
   * the same options as `map`; resolves to each branch's result by name.
   *
   * @example
   * ```ts
   * const { flight, hotel } = await step.parallel("book", {
   *   flight: (step) => step.run("flight", () => airline.book(trip)),
   *   hotel: (step) => step.run("hotel", () => hotels.book(trip)),
   * });
   * ```
   */
  parallel<B extends Record<string, (step: ItemStep<S>) => Promise<unknown> | unknown>>(name: string, branches: B, options?: ParallelOptions & { failures?: "fail-fast" }): Promise<{ [K in keyof B]: Awaited<ReturnType<B[K]>> }>;
  parallel<B extends Record<string, (step: ItemStep<S>) => Promise<unknown> | unknown>>(name: string, branches: B, options: ParallelOptions & { failures: "collect" }): Promise<{ [K in keyof B]: MapOutcome<Awaited<ReturnType<B[K]>>> }>;
  /**
   * Starts a run of another workflow (a child) and waits for it: its result is this step's, its
   * failure or cancellation a `ChildFailedError`. The child's run id derives from this run and
   * step unless given, so a retry or replay never starts a second one; its end wakes this run.
   * Cancelling this run while it waits cancels the child too (unless `cancelWithParent: false`).
   *
   * @example
   * ```ts
   * const receipt = await step.invoke("pay", paymentFlow, { input: { orderId, amount } });
   * ```
   */
  invoke<CI, CO>(name: string, workflow: Workflow<CI, CO, SignalMap>, options: ChildOptions<CI>): Promise<CO>;
  /**
   * Starts a child run and goes on without waiting for it; returns its run id.
   *
   * @example
   * ```ts
   * const { runId } = await step.start("audit", auditFlow, { input: { orderId } });
   * ```
   */
  start<CI>(name: string, workflow: Workflow<CI, unknown, SignalMap>, options: ChildOptions<CI>): Promise<{ runId: string }>;
  /** A saga: register compensations as you go, run them (newest first, as steps) to undo. See {@link Saga}. */
  saga(): Saga;
  /** The current time, the same on every replay. */
  now(): Date;
  /** A number in [0, 1), the same on every replay. */
  random(): number;
  /** A UUID, the same on every replay. */
  uuid(): string;
  /** Logs once per run, not on every replay (see {@link StepLog}). */
  readonly log: StepLog;
}

