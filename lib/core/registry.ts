import type { AnyWorkflow } from "./definition.ts";
import { WorkflowDefinitionError } from "./errors.ts";

/** The workflows a process hosts, by name. */
export type Registry = ReadonlyMap<string, AnyWorkflow>;

/** Builds a registry; two workflows with one name are a definition error. */
export function createRegistry(workflows: readonly AnyWorkflow[]): Registry {
  const map = new Map<string, AnyWorkflow>();
  for (const w of workflows) {
    if (w?.kind !== "waymark.workflow") throw new WorkflowDefinitionError("expected workflows made by durable()");
    if (map.has(w.name)) throw new WorkflowDefinitionError(`two workflows are named "${w.name}"`);
    map.set(w.name, w);
  }
  return map;
}
