/**
 * `step.map` and `step.parallel` over sub-contexts. Items start in index order, at most
 * `concurrency` running at once; an item whose code sleeps or waits frees its slot (unless
 * `holdSlotWhileWaiting`), so the bound holds across suspensions: every invocation schedules the
 * same way from the journal, and a replay frees slots no later than the live run did, so it
 * reaches every item the live run started. Fail-fast: after a failure no new item starts —
 * except items the journal already holds (they started before it, live) — and the map rejects,
 * once the items in flight have ended, with the failure of the lowest index.
 *
 * Runs recorded by the map of earlier versions (one `run` step per item, `<mapId>/<index>`) keep
 * those results: such an item is not run again.
 */
import { serializeError } from "../error-codec.ts";
import { WorkflowDefinitionError } from "../errors.ts";
import type { MapOptions, MapOutcome } from "../fan-out.ts";
import { assertName } from "../definition.ts";
import { resultOf } from "./core.ts";
import { never } from "./never.ts";
import { Scope } from "./scope.ts";

/** One item or branch to run: its scope's label (`3`, `flights`) and its code. */
export interface FanItem<R> {
  label: string;
  run: (scope: Scope, index: number) => Promise<R> | R;
}

/**
 * Runs `items` as sub-contexts of `parent` under `id`; resolves to one outcome per item (in
 * order). With fail-fast, rejects with the lowest-index failure instead.
 */
export async function fanOut<R>(parent: Scope, id: string, items: ReadonlyArray<FanItem<R>>, options: MapOptions): Promise<Array<MapOutcome<R>>> {
  const core = parent.core;
  const journal = core.o.journal;
  const { concurrency = 10, failures = "fail-fast", holdSlotWhileWaiting = false } = options;
  if (!Number.isFinite(concurrency) || concurrency < 1) throw new WorkflowDefinitionError(`"${id}": concurrency must be a positive number`);
  for (const legacy of ["retries", "timeout", "semantics"]) {
    if (legacy in options) throw new WorkflowDefinitionError(`"${id}": items get a step API now; pass ${legacy} to the item's own step.run`);
  }
  const limit = Math.floor(concurrency);
  const failFast = failures === "fail-fast";
  const count = items.length;
  // Items the journal already holds something of: they had started, and are always resumed.
  const started = new Set<number>();
  const ids = [...journal.stepIds(), ...journal.attemptedStepIds()];
  items.forEach((item, index) => {
    const prefix = `${id}[${item.label}]/`;
    if (journal.step(`${id}/${index}`) || ids.some((s) => s.startsWith(prefix))) started.add(index);
  });
  const outcomes: Array<MapOutcome<R> | { ok: false; error: unknown } | undefined> = new Array(count);
  let next = 0;
  let running = 0;
  let settledCount = 0;
  let launched = 0;
  let failed = false;

  return new Promise<Array<MapOutcome<R>>>((resolve, reject) => {
    const finishIfDone = () => {
      if (next < count || settledCount < launched) return;
      if (failFast) {
        const first = outcomes.find((o): o is { ok: false; error: unknown } => o !== undefined && !o.ok);
        if (first) return reject(first.error);
      }
      resolve(outcomes.map((o) => (o === undefined || o.ok ? o : { ok: false, error: serializeError(o.error) })) as Array<MapOutcome<R>>);
    };
    const launch = (): void => {
      while (next < count && running < limit) {
        const index = next++;
        if (failFast && failed && !started.has(index)) continue;
        const item = items[index] as FanItem<R>;
        running++;
        launched++;
        let holding = true;
        const release = () => {
          if (!holding) return;
          holding = false;
          running--;
          // Not inside the blocking call: the next item starts once the current turn is over.
          queueMicrotask(launch);
        };
        run(index, item, release).then(
          (value) => {
            outcomes[index] = { ok: true, value };
          },
          (error: unknown) => {
            outcomes[index] = { ok: false, error };
            failed = true;
          },
        ).finally(() => {
          settledCount++;
          release();
          finishIfDone();
        });
      }
      finishIfDone();
    };
    const run = async (index: number, item: FanItem<R>, release: () => void): Promise<R> => {
      // The map of earlier versions recorded each item as one step: that result stands.
      const legacy = journal.step(`${id}/${index}`);
      if (legacy) {
        core.visited.add(legacy.stepId);
        if (legacy.kind !== "run") return core.nondeterminism(legacy.stepId, `a ${legacy.kind} step`, "a map item");
        return resultOf<R>(legacy);
      }
      if (core.done) return never();
      const scope = new Scope(core, `${id}[${item.label}]/`, parent);
      if (!holdSlotWhileWaiting) scope.onBlocked(release);
      return item.run(scope, index);
    };
    launch();
  });
}

/** Checks a branch name of `step.parallel` (it becomes part of step ids). */
export function branchLabel(name: string): string {
  assertName("branch", name);
  return name;
}
