/**
 * What the client asks of the workflows this process hosts: the one a start or a signal is
 * for, and the errors that say which ones are hosted when none fits.
 */
import { UnknownSignalError, UnknownWorkflowError } from "./core/errors.ts";
import type { Registry } from "./core/registry.ts";
import type { StandardSchemaV1 } from "./core/standard-schema.ts";
import { workflowName } from "./run-handle.ts";

/**
 * `UnknownWorkflowError` for `requested`, naming the workflows this process hosts.
 *
 * @example
 * ```ts
 * throw unknownWorkflow("ordr-flow", registry); // … is registered here; hosted here: order-flow, order-flow@v2
 * ```
 */
export function unknownWorkflow(requested: string, registry: Registry): UnknownWorkflowError {
  const err = new UnknownWorkflowError(requested);
  const hosted = [...registry.keys()].sort();
  err.message = `${err.message}; hosted here: ${hosted.length > 0 ? hosted.join(", ") : "none"}`;
  return err;
}

/**
 * The schema of signal `name` in the workflow version a run records (`workflow`). When that
 * version is not hosted here (the run waits for a deploy that hosts it), its schema is not
 * either: `undefined` (the payload goes unchecked, and the run's wait checks it) as long as a
 * hosted version of the workflow declares the name. Throws `UnknownSignalError` when none
 * does, `UnknownWorkflowError` when no version of the workflow is hosted here.
 *
 * @example
 * ```ts
 * const schema = signalSchema(registry, run.workflow, "approval");
 * if (schema && !validate(schema, payload).success) throw new InvalidInputError("…", []);
 * ```
 */
export function signalSchema(registry: Registry, workflow: string, name: string): StandardSchemaV1 | undefined {
  const def = registry.get(workflow);
  if (def) {
    const schema = Object.hasOwn(def.signals, name) ? def.signals[name] : undefined;
    if (!schema) throw new UnknownSignalError(workflow, name);
    return schema;
  }
  const versions = [...registry.values()].filter((w) => w.name === workflowName(workflow));
  if (versions.length === 0) throw unknownWorkflow(workflow, registry);
  if (!versions.some((w) => Object.hasOwn(w.signals, name))) throw new UnknownSignalError(workflowName(workflow), name);
  return undefined;
}
