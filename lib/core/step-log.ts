/**
 * `step.log`: a workflow's lines, written once. The workflow's code runs again from the top on
 * every invocation; a line is a replay when the journal still holds steps the code has not
 * reached again in this invocation (it was written by the invocation that recorded them).
 */
import type { LogAttributes, StepLog } from "./definition.ts";
import type { JournalView } from "./journal-view.ts";
import type { StepLogLine } from "./execution-types.ts";

/** Step ids the journal knows (finished steps, and steps with failed or started attempts). */
export function journaledStepIds(journal: JournalView): Set<string> {
  const ids = new Set(journal.stepIds());
  for (const id of journal.attemptedStepIds()) ids.add(id);
  return ids;
}

/**
 * The step API's logger. `reached` holds the ids the code has called in this invocation;
 * `last()` is the latest of them.
 */
export function createStepLog(journaled: ReadonlySet<string>, reached: ReadonlySet<string>, last: () => string | undefined, write: ((line: StepLogLine) => void) | undefined): StepLog {
  // A wait's `:notify` step belongs to the wait: reaching the wait reaches it.
  const replaying = () => [...journaled].some((id) => !reached.has(id.endsWith(":notify") ? id.slice(0, -":notify".length) : id));
  const line = (level: StepLogLine["level"]) => (message: string, attributes: LogAttributes = {}) => {
    if (!write || replaying()) return;
    const stepId = last();
    write({ level, message: String(message), attributes, ...(stepId === undefined ? {} : { stepId }) });
  };
  return { info: line("info"), warn: line("warn"), error: line("error") };
}
