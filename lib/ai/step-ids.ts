/**
 * The step id the engine will give the next use of a name (`name`, `name#2`, …), counted per
 * invocation (one `Step` object per invocation). Only for messages that must name a replayed
 * step: the id is right as long as the workflow uses the wrapper's step names for nothing else.
 */
import type { Step } from "../core/definition.ts";

const counters = new WeakMap<Step, Map<string, number>>();

export function nextStepId(step: Step, name: string): string {
  let names = counters.get(step);
  if (!names) counters.set(step, (names = new Map()));
  const n = (names.get(name) ?? 0) + 1;
  names.set(name, n);
  return n === 1 ? name : `${name}#${n}`;
}
