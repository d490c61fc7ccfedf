import type { AnyWorkflow } from "./definition.ts";
import { WorkflowDefinitionError } from "./errors.ts";

/** The workflows a process hosts, by the key their runs record (`name`, or `name@v<n>` for later versions). */
export type Registry = ReadonlyMap<string, AnyWorkflow>;

/** Builds a registry; two workflows with one name and version are a definition error. */
export function createRegistry(workflows: readonly AnyWorkflow[]): Registry {
  const map = new Map<string, AnyWorkflow>();
  for (const w of workflows) {
    if (w?.kind !== "waymark.workflow") throw new WorkflowDefinitionError("expected workflows made by durable()");
    if (map.has(w.key)) throw new WorkflowDefinitionError(w.version > 1 ? `two workflows are named "${w.name}" at version ${w.version}` : `two workflows are named "${w.name}"`);
    map.set(w.key, w);
  }
  return map;
}

/**
 * The workflow a new run of `name` starts on: the highest version hosted. An exact key
 * (`order-flow@v2`) names that version.
 */
export function workflowToStart(registry: Registry, name: string): AnyWorkflow | undefined {
  if (name.includes("@v")) return registry.get(name);
  let latest: AnyWorkflow | undefined;
  for (const w of registry.values()) if (w.name === name && (latest === undefined || w.version > latest.version)) latest = w;
  return latest;
}
