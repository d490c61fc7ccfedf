/**
 * The client: start, signal, inspect and cancel runs, over the same ports the engine uses.
 * Every call validates before it asks the run protocol (lib/core/run/) to write: a bad input, an
 * unknown run, a signal that fails its schema or targets a resolved wait is a clear error and
 * leaves the journal unchanged.
 */
import type { AnyWorkflow } from "./core/definition.ts";
import {
  InvalidInputError,
  RunFinishedError,
  RunNotFoundError,
  SignalConflictError,
  WaitNotFoundError,
  WaitResolvedError,
} from "./core/errors.ts";
import { JournalView } from "./core/journal-view.ts";
import { assertJsonSafe, DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_VALUE_BYTES } from "./core/json.ts";
import { JOURNAL_VERSION, type SignalRecord, type SignalSender } from "./core/records.ts";
import { type Registry, workflowToStart } from "./core/registry.ts";
import { type CancelAnswer, RunProtocol, type WakeAnswer } from "./core/run/protocol.ts";
import { decision, findResolutionOf, sameEnvelope, type SignalReceipt } from "./core/run/signals.ts";
import { zodIssues } from "./core/zod-issues.ts";
import { loadRef, metaRef, type PayloadOptions, Payloads, toMetaRef } from "./core/payloads.ts";
import { validate } from "./core/validate.ts";
import { RUN_ID, RUN_ID_RULE } from "./core/run-id.ts";
import { type Clock, type JournalStore, type ListQuery, type RunMeta, type RunPage, TERMINAL_STATUSES, type WakeQueue } from "./ports.ts";
import { pollUntilEnded, type ResultOptions, type RunHandle, runHandle, type WorkflowInput, WorkflowMismatchError, workflowName } from "./run-handle.ts";
import { signalSchema, unknownWorkflow } from "./hosted.ts";
import { type HistoryEntry, historyOf, refuseTooLarge, sameStoredValue } from "./client-values.ts";

export type { CancelAnswer, SignalReceipt, WakeAnswer };
export type { HistoryEntry };


/**
 * What a `Client` is built from: the store, wakes and clock, the workflows whose schemas check
 * inputs and payloads, and an optional payload store.
 */
export interface ClientOptions {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
  /** Inputs and signal payloads over `inlineBytes` go to this store by reference (the engine's options). */
  payloads?: PayloadOptions;
}

/** What starting a run takes: its caller-chosen run id and its input. */
export interface StartOptions<I> {
  /** Caller-chosen, stable: starting the same id with the same input again returns the run. */
  runId: string;
  input: I;
}

/** What starting a run answers: the run id, whether it was created now, and the run's record. */
export interface StartResult {
  runId: string;
  /** False when the run already existed with this input (an idempotent retry). */
  created: boolean;
  run: RunMeta;
}

/** Options of a signal: its idempotent id, the wait it targets, and who sent it. */
export interface SignalOptions {
  /** Idempotency key of the delivery: the same id delivered twice is one signal. */
  signalId?: string;
  /** Target one wait (e.g. `approval#2`) instead of the oldest open wait for this signal. */
  waitId?: string;
  /** Who sends it, recorded with the signal and shown to the workflow (`WaitResult.sender`). */
  sender?: SignalSender;
  /** With `waitId`: the wait's record time, as a link carries it; another wait of that id is refused. */
  waitRecordedAt?: number;
  /** Only to a run of this workflow (by name): a run of another is refused with `WorkflowMismatchError`. Handles set it. */
  workflow?: string;
}

/**
 * Creates a client.
 *
 * @example
 * ```ts
 * const { client } = createLocalRuntime({ workflows: [orderFlow] });
 * const run = client.handle(orderFlow, "order-8472");
 * await run.start(order); // the input type-checked against orderFlow's schema
 * await run.signal("approval", { approved: true, approver: "ana" }); // so are the name and payload
 * console.log((await run.get()).status);
 * ```
 */
export function createClient(o: ClientOptions): Client {
  return new Client(o);
}

/**
 * Starts, signals, wakes, cancels and inspects runs, over the same ports as the engine; every
 * write goes through the run protocol. Get one from a runtime (`runtime.client`) or
 * `createClient`.
 *
 * @example
 * ```ts
 * const run = runtime.client.handle(orderFlow, "order-8472"); // typed by orderFlow
 * await run.start(order);
 * await run.signal("approval", { approved: true, approver: "ana" });
 * ```
 */
export class Client {
  private readonly payloads: Payloads | undefined;
  private readonly protocol: RunProtocol;

  constructor(private readonly o: ClientOptions) {
    this.payloads = o.payloads ? new Payloads(o.payloads) : undefined;
    this.protocol = new RunProtocol({ store: o.store, wakes: o.wakes, clock: o.clock, workflows: o.workflows });
  }

  /**
   * A typed handle on one run of `workflow`: its input, each signal's name and payload, and its
   * result are checked at compile time. Nothing is read or written until a method is called.
   *
   * @example
   * ```ts
   * const order = client.handle(orderFlow, "order-8472");
   * await order.start({ orderId: "8472", sku: "LAMP-01", quantity: 1, amount: 10, email: "kim@example.com", address: "1 Harbour St" });
   * await order.signal("approval", { approved: true, approver: "ana" });
   * const shipped = await order.result({ timeout: "1m" });
   * ```
   */
  handle<W extends AnyWorkflow>(workflow: W, runId: string): RunHandle<W> {
    return runHandle(workflow, runId, {
      start: (w, o) => this.start(w, o),
      signal: (id, name, payload, o) => this.signal(id, name, payload, o),
      get: (id) => this.get(id),
      cancel: (id, o) => this.cancel(id, o),
      ended: (id, o) => this.ended(id, o),
    });
  }

  /**
   * Starts a run, idempotently by run id. Given the workflow, its input is type-checked; given
   * a name (`"order-flow"`, or `"order-flow@v2"` for one version), it is checked at run time
   * only. Throws `InvalidInputError`, `RunConflictError`, or `UnknownWorkflowError` (naming the
   * workflows hosted here).
   *
   * @example
   * ```ts
   * await client.start(orderFlow, { runId: "order-8472", input: order });
   * ```
   */
  async start<W extends AnyWorkflow | string>(workflow: W, options: StartOptions<W extends AnyWorkflow ? WorkflowInput<W> : unknown>): Promise<StartResult> {
    const requested = typeof workflow === "string" ? workflow : workflow.key;
    const def = typeof workflow === "string" ? workflowToStart(this.o.workflows, workflow) : this.o.workflows.get(requested);
    if (!def) throw unknownWorkflow(requested, this.o.workflows);
    const name = def.key;
    const { runId, input } = options;
    if (typeof runId !== "string" || !RUN_ID.test(runId)) {
      throw new InvalidInputError("invalid run id", [{ path: "runId", message: RUN_ID_RULE }]);
    }
    const parsed = validate(def.input, input);
    if (!parsed.success) throw new InvalidInputError(`invalid input for workflow "${name}"`, zodIssues(parsed.error));
    assertJsonSafe(input, "input");
    if (metaRef(input)) throw new InvalidInputError("invalid input", [{ path: "input", message: "an object whose only key is $waymarkPayload is reserved for values stored by reference" }]);
    refuseTooLarge(input, "input", this.payloads?.maxBytes ?? DEFAULT_MAX_INPUT_BYTES);
    const now = this.o.clock.now();
    // Stored before the run exists (an orphan if the start fails or finds the run: content-addressed, harmless).
    const ref = await this.payloads?.offload(runId, now, input);
    const stored = ref ? toMetaRef(ref) : input;
    const { created, run } = await this.protocol.start(def, { runId, stored, input: parsed.data, now, sameInput: (existing) => this.sameValue(existing.input, input) });
    return { runId, created, run };
  }

  /**
   * Delivers a signal by name (for callers that hold only names: the CLI, the webhook; code
   * gets its payload type-checked through {@link Client.handle}). Resolves the oldest open wait
   * for it, or buffers it for the next wait. Throws `WaitResolvedError` (the signal is kept as a
   * late event) when its wait was already decided, `InvalidInputError` when the payload fails
   * the declared schema.
   *
   * A run of a workflow version this process does not host (it waits for a deploy that does)
   * takes the signal unchecked against its schema, which is not here — the engine checks it when
   * the run's wait takes it — provided some hosted version of the workflow declares the signal's
   * name (else `UnknownSignalError`); with no version of that workflow hosted here at all, it is
   * refused with `UnknownWorkflowError`.
   *
   * @example
   * ```ts
   * await client.signal("order-8472", "approval", { approved: true, approver: "ana" }, { signalId: "mail-771" });
   * ```
   */
  async signal(runId: string, name: string, payload: unknown, options: SignalOptions = {}): Promise<SignalReceipt> {
    const { clock } = this.o;
    const run = await this.requireRun(runId);
    if (options.workflow !== undefined && workflowName(run.workflow) !== options.workflow) throw new WorkflowMismatchError(runId, options.workflow, run.workflow);
    if (TERMINAL_STATUSES.has(run.status)) {
      // A retried delivery of a signal the run already took is answered as before.
      const view = options.signalId === undefined ? undefined : await this.view(runId);
      const waitId = view && options.signalId !== undefined ? findResolutionOf(view, options.signalId) : undefined;
      if (options.signalId !== undefined && waitId !== undefined) {
        // Only the same delivery again: the same id with another name or payload is a conflict.
        const prior = view?.signal(options.signalId);
        if (prior && (prior.name !== name || !(await this.sameValue(prior.payloadRef ?? prior.payload, payload, prior.payloadRef !== undefined)))) throw new SignalConflictError(runId, options.signalId);
        return { signalId: options.signalId, status: "delivered", waitId };
      }
      throw new RunFinishedError(runId, run.status);
    }
    const schema = signalSchema(this.o.workflows, run.workflow, name);
    if (schema) {
      const parsed = validate(schema, payload);
      if (!parsed.success) throw new InvalidInputError(`invalid payload for signal "${name}"`, zodIssues(parsed.error));
    }
    assertJsonSafe(payload, "payload");
    refuseTooLarge(payload, "payload", this.payloads?.maxBytes ?? DEFAULT_MAX_VALUE_BYTES);
    const signalId = options.signalId ?? globalThis.crypto.randomUUID();
    if (!RUN_ID.test(signalId)) throw new InvalidInputError("invalid signal id", [{ path: "signalId", message: RUN_ID_RULE }]);

    if (options.waitId !== undefined) {
      // Reject a stale or misdirected signal before writing anything.
      const view = await this.view(runId);
      const wait = view.step(options.waitId);
      if (!wait || wait.kind !== "wait" || wait.signal !== name) throw new WaitNotFoundError(runId, options.waitId);
      // A link names its wait by id and by when it was recorded: a wait of the same id in a later
      // incarnation (continueAsNew) or a later run with the same id is another wait.
      if (options.waitRecordedAt !== undefined && wait.at !== options.waitRecordedAt) throw new WaitNotFoundError(runId, options.waitId);
      const decided = view.resolution(options.waitId);
      if (decided && decided.signalId !== signalId) throw new WaitResolvedError(runId, options.waitId, decision(decided));
    }

    // A large payload goes by reference, under this incarnation of the run id.
    const ref = await this.payloads?.offload(runId, run.createdAt, payload);
    const value = ref ? { payloadRef: ref } : { payload };
    const record: SignalRecord = { v: JOURNAL_VERSION, at: clock.now(), type: "signal", signalId, name, ...value, ...(options.waitId === undefined ? {} : { waitId: options.waitId }), ...(options.sender ? { sender: options.sender } : {}) };
    // The same delivery again (a retry): same name, wait, sender and payload.
    const same = async (stored: SignalRecord) => sameEnvelope(stored, record) && (await this.sameValue(stored.payloadRef ?? stored.payload, payload, stored.payloadRef !== undefined));
    return this.protocol.signal(run, record, same);
  }

  /**
   * The workflow definition this client hosts for a run's recorded workflow (`order-flow`,
   * `order-flow@v2`), or the newest version of a name; `undefined` when not hosted here. Pages
   * and the CLI read the input and signal schemas from it.
   *
   * @example
   * ```ts
   * const run = await client.get("order-8472");
   * const approvalSchema = client.workflow(run.workflow)?.signals.approval;
   * ```
   */
  workflow(key: string): AnyWorkflow | undefined {
    return this.o.workflows.get(key) ?? workflowToStart(this.o.workflows, key);
  }

  /**
   * The workflows new runs can start on: the newest hosted version of each name.
   *
   * @example
   * ```ts
   * for (const w of client.startable()) console.log(w.name, w.version);
   * ```
   */
  startable(): AnyWorkflow[] {
    const names = new Set([...this.o.workflows.values()].map((w) => w.name));
    return [...names].sort().flatMap((n) => workflowToStart(this.o.workflows, n) ?? []);
  }

  /**
   * The run's meta record. Throws `RunNotFoundError`. An input or result stored by reference is
   * read back (and checked against its hash); `list` and `history` show references as they are.
   */
  async get(runId: string): Promise<RunMeta> {
    const run = await this.requireRun(runId);
    const inputRef = metaRef(run.input);
    const resultRef = metaRef(run.result);
    if (inputRef) run.input = await loadRef(this.payloads, inputRef);
    if (resultRef) run.result = await loadRef(this.payloads, resultRef);
    return run;
  }

  /** Runs, newest first, optionally by status. */
  async list(query: ListQuery = {}): Promise<RunPage> {
    return this.o.store.listRuns(query);
  }

  /** The run's records in write order; records this code cannot read are shown, not hidden. */
  async history(runId: string, options: { incarnation?: number } = {}): Promise<{ run: RunMeta; entries: HistoryEntry[] }> {
    const journal = await this.o.store.loadJournal(runId, options);
    if (!journal) throw new RunNotFoundError(runId);
    return historyOf(runId, journal);
  }

  /**
   * Cancels a run, and says what that did: `cancelled` — it had not started, and ended now
   * (`cancelled`, out of its queue if it waited for a slot); `requested` — the request is
   * journaled and the run woken: the workflow gets `CancelledError` at its next step, sleep or
   * wait (or out of the step running now, whose `signal` aborts; a step that runs on is followed
   * by no further forward step), runs its compensations, and ends `cancelled` with the reason;
   * `already-ended` — it had ended (`status` says how). Idempotent: asking again keeps the first
   * reason. Throws `RunNotFoundError`.
   *
   * @example
   * ```ts
   * const { outcome } = await client.cancel("order-8472", { reason: "customer withdrew the order" });
   * if (outcome === "already-ended") console.log("too late: the order went through");
   * ```
   */
  async cancel(runId: string, options: { reason?: string } = {}): Promise<CancelAnswer> {
    return this.protocol.cancel(runId, options.reason ?? "cancelled by request");
  }

  /** The run once it has ended, polling its record until `timeout`. */
  private async ended(runId: string, options: ResultOptions): Promise<RunMeta> {
    await pollUntilEnded(() => this.requireRun(runId), options);
    return this.get(runId); // values by reference read back
  }

  /**
   * Wake now: ends the run's current sleep early (or the sleep `stepId` names), journaled as the
   * sleep's resolution so every replay agrees, and wakes the run. Returns the sleeps it ended:
   * none when the run was not asleep. Throws `RunNotFoundError`, `RunFinishedError`.
   *
   * @example
   * ```ts
   * const { woken } = await client.wake("order-8472"); // ["cool-off"]: the run goes on now
   * ```
   */
  async wake(runId: string, options: { stepId?: string } = {}): Promise<WakeAnswer> {
    return this.protocol.wake(runId, options.stepId);
  }

  private sameValue(stored: unknown, value: unknown, isRef = false): Promise<boolean> {
    return sameStoredValue(this.payloads, stored, value, isRef);
  }

  private async requireRun(runId: string): Promise<RunMeta> {
    const run = await this.o.store.getRun(runId);
    if (!run) throw new RunNotFoundError(runId);
    return run;
  }

  private async view(runId: string): Promise<JournalView> {
    const journal = await this.o.store.loadJournal(runId);
    if (!journal) throw new RunNotFoundError(runId);
    return JournalView.parse(runId, journal.records);
  }
}
