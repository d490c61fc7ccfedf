/**
 * The second stage of an invocation: the journal loaded under the lease, and what the workflow
 * runs with — its definition hosted here, the journal parsed, the input read back and checked.
 * Anything that stops the run here (not hosted, out of its invocation budget, a journal this code
 * cannot read, an input that no longer fits) is the invocation's end, decided before any code runs.
 */
import type { AnyWorkflow } from "./definition.ts";
import { serializeError } from "./error-codec.ts";
import { InvalidInputError, InvocationBudgetError, JournalFormatError } from "./errors.ts";
import type { EngineOptions, InvocationResult } from "./engine-types.ts";
import { end } from "./engine-settle.ts";
import { JournalView } from "./journal-view.ts";
import { isPayloadFault, loadRef, metaRef, type Payloads } from "./payloads.ts";
import type { Grant } from "./run/leases.ts";
import type { RunProtocol } from "./run/protocol.ts";
import { validate } from "./validate.ts";
import { zodIssues } from "./zod-issues.ts";
import type { Journal, Timers } from "../ports.ts";

/** What every stage of an invocation shares. */
export interface EngineContext {
  o: EngineOptions;
  protocol: RunProtocol;
  ttl: number;
  timers: Timers;
  payloads: Payloads | undefined;
}

export type Prepared = { type: "ready"; workflow: AnyWorkflow; view: JournalView; input: unknown; journal: Journal } | { type: "end"; result: InvocationResult };

export async function prepare(c: EngineContext, g: Grant): Promise<Prepared> {
  const { protocol, o } = c;
  const runId = g.runId;
  let journal = await protocol.loadFirst(g);
  if (!journal) return { type: "end", result: { status: "missing" } };
  const workflow = o.workflows.get(journal.run.workflow);
  // Another deploy may host it: wait for one, backing off, and say why in `waitingFor`.
  if (!workflow) return { type: "end", result: await protocol.unhosted(g, journal.run.workflow) };
  const budget = o.maxInvocations ?? 10_000;
  if (g.run.invocations > budget) {
    // Out of budget, perhaps because telling its parent kept failing: one last try, then end.
    const failed = { type: "failed" as const, error: serializeError(new InvocationBudgetError(runId, budget)) };
    await protocol.lastWordToParent(runId, failed);
    return { type: "end", result: await end(c, g, failed) };
  }
  let view: JournalView;
  try {
    view = JournalView.parse(runId, journal.records);
    // A continued incarnation where nothing ran yet: what its switch may have left behind first.
    if (g.incarnation > 1 && !view.hasRun() && (await protocol.completeSwitch(g))) {
      journal = await protocol.load(g);
      if (!journal) return { type: "end", result: { status: "missing" } };
      view = JournalView.parse(runId, journal.records);
    }
    // Results an invocation that had lost its lease wrote after the holder loaded the journal:
    // where replay delivers them is journaled once, before any code runs (delivery-order.ts).
    // (Read again until none is left: another may land meanwhile.)
    while (view.unplaced().length > 0) {
      await protocol.placeLate(g, view.unplaced());
      journal = await protocol.load(g);
      if (!journal) return { type: "end", result: { status: "missing" } };
      view = JournalView.parse(runId, journal.records);
    }
  } catch (err) {
    if (err instanceof JournalFormatError) return { type: "end", result: await end(c, g, { type: "failed", error: serializeError(err) }) };
    throw err;
  }
  let recorded = journal.run.input;
  const ref = metaRef(recorded);
  if (ref) {
    try {
      recorded = await loadRef(c.payloads, ref);
    } catch (err) {
      if (isPayloadFault(err)) return { type: "end", result: await end(c, g, { type: "failed", error: serializeError(err) }) };
      throw err;
    }
  }
  const input = validate(workflow.input, recorded);
  if (!input.success) {
    const err = new InvalidInputError(`run "${runId}": its recorded input no longer fits the workflow's schema`, zodIssues(input.error));
    return { type: "end", result: await end(c, g, { type: "failed", error: serializeError(err) }) };
  }
  return { type: "ready", workflow, view, input: input.data, journal };
}
