/**
 * The client: start, signal, inspect and cancel runs, over the same ports the engine uses.
 * Every call validates before it writes: a bad input, an unknown run, a signal that fails its
 * schema or targets a resolved wait is a clear error and leaves the journal unchanged.
 */
import type { AnyWorkflow } from "./core/definition.ts";
import {
  RateLimitedError,
  CancelledError,
  InvalidInputError,
  RunConflictError,
  RunFinishedError,
  RunNotFoundError,
  SignalConflictError,
  UnknownSignalError,
  UnknownWorkflowError,
  WaitNotFoundError,
  WaitResolvedError,
} from "./core/errors.ts";
import { JournalView } from "./core/journal-view.ts";
import { serializeError } from "./core/error-codec.ts";
import { assertJsonSafe, canonicalJson, DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_VALUE_BYTES, jsonBytes } from "./core/json.ts";
import { JOURNAL_VERSION, type JournalRecord, type SignalRecord, type SignalSender, keys, parseRecord } from "./core/records.ts";
import { type Registry, workflowToStart } from "./core/registry.ts";
import { journalIdOf } from "./core/incarnation.ts";
import { askToCancel, followIncarnation } from "./core/engine-runs.ts";
import { decision, findResolutionOf, type ResolutionContext, resolveSignal } from "./signal-resolution.ts";
import { debounceScope, rateScope } from "./core/flow-control.ts";
import { cancelQueued, isQueued } from "./core/queued-cancel.ts";
import { zodIssues } from "./core/zod-issues.ts";
import { loadRef, metaRef, type PayloadOptions, Payloads, sha256Hex, toMetaRef } from "./core/payloads.ts";
import { validate } from "./core/validate.ts";
import { RUN_ID, RUN_ID_RULE } from "./core/run-id.ts";
import { type Clock, type JournalStore, type ListQuery, type PayloadRef, type RunMeta, type RunPage, TERMINAL_STATUSES, type WakeQueue } from "./ports.ts";


export interface ClientOptions {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
  /** Inputs and signal payloads over `inlineBytes` go to this store by reference (the engine's options). */
  payloads?: PayloadOptions;
}

export interface StartOptions<I> {
  /** Caller-chosen, stable: starting the same id with the same input again returns the run. */
  runId: string;
  input: I;
}

export interface StartResult {
  runId: string;
  /** False when the run already existed with this input (an idempotent retry). */
  created: boolean;
  run: RunMeta;
}

export interface SignalOptions {
  /** Idempotency key of the delivery: the same id delivered twice is one signal. */
  signalId?: string;
  /** Target one wait (e.g. `approval#2`) instead of the oldest open wait for this signal. */
  waitId?: string;
  /** Who sends it, recorded with the signal and shown to the workflow (`WaitResult.sender`). */
  sender?: SignalSender;
  /** With `waitId`: the wait's record time, as a link carries it; another wait of that id is refused. */
  waitRecordedAt?: number;
}

export interface SignalReceipt {
  signalId: string;
  /** `delivered`: it resolved a wait; `buffered`: no wait yet, the next one will take it. */
  status: "delivered" | "buffered";
  waitId?: string;
}

/** One record of a run's history, in write order. */
export interface HistoryEntry {
  key: string;
  at: number;
  record?: JournalRecord;
  lateFor?: string;
  /** Why this code cannot read the record (another code version). */
  unreadable?: string;
}

/**
 * Creates a client.
 *
 * @example
 * ```ts
 * const { client } = createLocalRuntime({ workflows: [orderFlow] });
 * await client.start(orderFlow, { runId: "order-8472", input: order });
 * await client.signal("order-8472", "approval", { approved: true, approver: "ana" });
 * console.log((await client.get("order-8472")).status);
 * ```
 */
export function createClient(o: ClientOptions): Client {
  return new Client(o);
}

export class Client {
  private readonly payloads: Payloads | undefined;

  constructor(private readonly o: ClientOptions) {
    this.payloads = o.payloads ? new Payloads(o.payloads) : undefined;
  }

  /** Starts a run, idempotently by run id. Throws `InvalidInputError` or `RunConflictError`. */
  async start<I>(workflow: AnyWorkflow | string, options: StartOptions<I>): Promise<StartResult> {
    const requested = typeof workflow === "string" ? workflow : workflow.key;
    const def = typeof workflow === "string" ? workflowToStart(this.o.workflows, workflow) : this.o.workflows.get(requested);
    if (!def) throw new UnknownWorkflowError(requested);
    const name = def.key;
    const { runId, input } = options;
    if (typeof runId !== "string" || !RUN_ID.test(runId)) {
      throw new InvalidInputError("invalid run id", [{ path: "runId", message: RUN_ID_RULE }]);
    }
    const parsed = validate(def.input, input);
    if (!parsed.success) throw new InvalidInputError(`invalid input for workflow "${name}"`, zodIssues(parsed.error));
    assertJsonSafe(input, "input");
    if (metaRef(input)) throw new InvalidInputError("invalid input", [{ path: "input", message: "an object whose only key is $waymarkPayload is reserved for values stored by reference" }]);
    tooLarge(input, "input", this.payloads?.maxBytes ?? DEFAULT_MAX_INPUT_BYTES);
    const now = this.o.clock.now();
    const rate = def.rateLimit;
    if (rate && rate.onLimit === "reject") {
      // The start is counted before the run exists; a retried start of the same run id keeps its count.
      const key = String(rate.key(parsed.data));
      if (!(await this.o.store.takeSlot(rateScope(def.key, key), rate.limit, { runId, expiresAt: now + rate.periodMs }, now))) throw new RateLimitedError(def.key, key);
    }
    // Stored before the run exists (an orphan if createRun fails or finds the run: content-addressed, harmless).
    const ref = await this.payloads?.offload(runId, now, input);
    const { created, run } = await this.o.store.createRun({ runId, workflow: name, input: ref ? toMetaRef(ref) : input, createdAt: now });
    // After continueAsNew the run holds its latest input; a retried start is judged by workflow alone.
    const sameStart = run.workflow === name && ((run.incarnation ?? 1) > 1 || (await this.sameValue(run.input, input)));
    if (!created && !sameStart) throw new RunConflictError(runId);
    const debounce = def.debounce;
    if (debounce) {
      // This start is the key's latest; the run waits out the period, then runs only if still so.
      await this.o.store.markLatest(debounceScope(def.key, String(debounce.key(parsed.data))), runId, run.createdAt);
      if (created || run.status === "pending") await this.o.wakes.schedule({ runId, at: run.createdAt + debounce.periodMs, reason: "start", key: "start" });
    } else if (created || run.status === "pending") await this.o.wakes.schedule({ runId, at: now, reason: "start", key: "start" });
    return { runId, created, run };
  }

  /**
   * Delivers a signal. Resolves the oldest open wait for it, or buffers it for the next wait.
   * Throws `WaitResolvedError` (the signal is kept as a late event) when its wait was already
   * decided, `InvalidInputError` when the payload fails the declared schema.
   */
  async signal(runId: string, name: string, payload: unknown, options: SignalOptions = {}): Promise<SignalReceipt> {
    const { store, clock } = this.o;
    const run = await this.requireRun(runId);
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
    const def = this.o.workflows.get(run.workflow);
    if (!def) throw new UnknownWorkflowError(run.workflow);
    const schema = Object.hasOwn(def.signals, name) ? def.signals[name] : undefined;
    if (!schema) throw new UnknownSignalError(run.workflow, name);
    const parsed = validate(schema, payload);
    if (!parsed.success) throw new InvalidInputError(`invalid payload for signal "${name}"`, zodIssues(parsed.error));
    assertJsonSafe(payload, "payload");
    tooLarge(payload, "payload", this.payloads?.maxBytes ?? DEFAULT_MAX_VALUE_BYTES);
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
    const journalId = journalIdOf(runId, run.incarnation);
    const put = await store.appendRecord(journalId, { key: keys.signal(signalId), body: record });
    if (put.written) await followIncarnation(this.o, runId, run.incarnation, keys.signal(signalId), record);
    if (!put.written) {
      const existing = parseRecord(runId, put.existing.key, put.existing.body);
      if (existing.type !== "signal" || existing.name !== name || existing.waitId !== options.waitId || !(await this.sameValue(existing.payloadRef ?? existing.payload, payload, existing.payloadRef !== undefined)) || canonicalJson(existing.sender) !== canonicalJson(options.sender)) {
        throw new SignalConflictError(runId, signalId);
      }
    }

    return resolveSignal(this.resolution(), runId, journalId, name, signalId, options.waitId);
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
    const entries: HistoryEntry[] = journal.records.map((r) => {
      const at = typeof (r.body as { at?: unknown })?.at === "number" ? (r.body as { at: number }).at : 0;
      try {
        const record = parseRecord(runId, r.key, r.body);
        return { key: r.key, at, record, ...(r.lateFor === undefined ? {} : { lateFor: r.lateFor }) };
      } catch (err) {
        return { key: r.key, at, unreadable: (err as Error).message };
      }
    });
    entries.sort((a, b) => a.at - b.at || (a.key < b.key ? -1 : 1));
    return { run: journal.run, entries };
  }

  /**
   * Asks a run to cancel. A run that never started (pending, or queued with no step run) ends
   * `cancelled` at once, out of its queue. Otherwise the request is journaled and the run
   * woken: the workflow gets `CancelledError` at its pending sleep or wait (or out of the step
   * running now, whose `signal` aborts), may run compensation steps, and then ends `cancelled`
   * with the reason. Returns false if the run had finished.
   * Idempotent: asking again keeps the first reason.
   *
   * @example
   * ```ts
   * await client.cancel("order-8472", { reason: "customer withdrew the order" });
   * ```
   */
  async cancel(runId: string, options: { reason?: string } = {}): Promise<boolean> {
    const { store, clock } = this.o;
    const run = await this.requireRun(runId);
    if (TERMINAL_STATUSES.has(run.status)) return false;
    const reason = options.reason ?? "cancelled by request";
    const now = clock.now();
    // Nothing ran yet: nothing to compensate. (A first invocation racing this finds it finished.)
    // A child's parent waits for its end, though: its first invocation ends it and tells the parent.
    if (run.status === "pending" && run.invocations === 0 && !(await store.getRecord(runId, keys.parent()))) {
      if (await store.finishRun(runId, { now, status: "cancelled", error: serializeError(new CancelledError(reason)) })) return true;
    }
    // Queued with nothing run yet: it ends now, and leaves its queue.
    if (isQueued(run) && (await cancelQueued(this.o, run, reason))) return true;
    await askToCancel(this.o, runId, run.incarnation, reason);
    return true;
  }

  /**
   * Wakes a run whose wait was resolved. The run is first marked due in the store, so that if
   * the wake is lost (or cannot be sent at all) the watchdog still finds it.
   */
  private async wake(runId: string): Promise<void> {
    const now = this.o.clock.now();
    await this.o.store.markDue(runId, now);
    await this.o.wakes.schedule({ runId, at: now, reason: "signal", key: "signal" });
  }

  /**
   * Whether a stored value (inline, a meta reference, or a record's `payloadRef` when `isRef`) is
   * `value`: by hash first, then by reading it back (the same value with its keys in another order).
   */
  private async sameValue(stored: unknown, value: unknown, isRef = false): Promise<boolean> {
    const ref = isRef ? (stored as PayloadRef) : metaRef(stored);
    if (!ref) return canonicalJson(stored) === canonicalJson(value);
    const text = JSON.stringify(value);
    if (text !== undefined && (await sha256Hex(new TextEncoder().encode(text))) === ref.sha256) return true;
    return canonicalJson(await loadRef(this.payloads, ref)) === canonicalJson(value);
  }

  /** What resolving a delivered signal needs (signal-resolution.ts). */
  private resolution(): ResolutionContext {
    return { ...this.o, view: (runId) => this.view(runId), wake: (runId) => this.wake(runId) };
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


/** Refuses a value the journal could not hold, before anything is written. */
function tooLarge(value: unknown, path: "input" | "payload", limit: number): void {
  const size = jsonBytes(value);
  if (size > limit) throw new InvalidInputError(`${path} too large`, [{ path, message: `${size} bytes as JSON, over the journal's limit of ${limit}; pass a reference (an S3 key) instead` }]);
}


