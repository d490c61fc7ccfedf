/**
 * Runs simulated stories by seed, and shrinks a failing one: its tape is cut and zeroed piece by
 * piece (0 is always the plain choice: the oldest task, no fault, no event) for as long as the
 * same kind of violation still happens, so what is left is a short story that still breaks the
 * rule. A seed, or a shrunk tape, replays exactly.
 */
import type { Story } from "./flow-story.ts";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "./scenario.ts";
import { encodeTape, Tape } from "./tape.ts";

export interface SeedResult extends ScenarioResult {
  seed: number;
  store: ScenarioOptions["store"];
  story: Story;
  tape: number[];
}

/** The store a seed runs on: one in four on a SQLite file (in memory), the rest on the memory store. */
export function storeOf(seed: number): ScenarioOptions["store"] {
  return seed % 4 === 3 ? "sqlite" : "memory";
}

export async function runSeed(seed: number, store: ScenarioOptions["store"] = storeOf(seed), story: Story = "plain"): Promise<SeedResult> {
  const tape = Tape.fromSeed(seed);
  const result = await runScenario(tape, { store, story });
  return { ...result, seed, store, story, tape: [...tape.drawn] };
}

export async function runTape(values: readonly number[], store: ScenarioOptions["store"], story: Story = "plain"): Promise<ScenarioResult & { tape: number[] }> {
  const tape = Tape.fixed(values);
  const result = await runScenario(tape, { store, story });
  return { ...result, tape: [...tape.drawn] };
}

/**
 * Shrinks a failing tape: truncations first, then zeroed chunks of falling size, then single
 * values made smaller; each candidate is kept if the same violation kind still occurs.
 */
export async function shrink(failing: SeedResult, budget = 400): Promise<ScenarioResult & { tape: number[] }> {
  const kind = failing.violation?.kind;
  let best: ScenarioResult & { tape: number[] } = { ...failing };
  let tries = 0;
  const attempt = async (candidate: number[]): Promise<boolean> => {
    if (tries++ >= budget) return false;
    const r = await runTape(candidate, failing.store, failing.story);
    if (r.violation?.kind !== kind) return false;
    if (r.tape.length > best.tape.length || (r.tape.length === best.tape.length && weight(r.tape) >= weight(best.tape))) return false;
    best = r;
    return true;
  };
  // Cut the end off.
  for (let len = Math.floor(best.tape.length / 2); len > 0 && tries < budget; len = Math.floor(len / 2)) {
    await attempt(best.tape.slice(0, best.tape.length - len));
  }
  // Zero chunks.
  for (const size of [64, 16, 4, 1]) {
    for (let at = 0; at < best.tape.length && tries < budget; at += size) {
      if (best.tape.slice(at, at + size).every((v) => v === 0)) continue;
      const candidate = [...best.tape];
      for (let i = at; i < at + size && i < candidate.length; i++) candidate[i] = 0;
      await attempt(candidate);
    }
  }
  // Smaller values.
  for (let at = 0; at < best.tape.length && tries < budget; at++) {
    const v = best.tape[at] ?? 0;
    if (v <= 1) continue;
    const candidate = [...best.tape];
    candidate[at] = Math.floor(v / 2);
    await attempt(candidate);
  }
  return best;
}

function weight(tape: readonly number[]): number {
  return tape.reduce((sum, v) => sum + (v === 0 ? 0 : 1), 0);
}

/** A failure as the test and the command print it: the seed, the rule, the shrunk story, how to replay. */
export function report(failing: SeedResult, shrunk: ScenarioResult & { tape: number[] }): string {
  const story = failing.story === "plain" ? "" : ` --story ${failing.story}`;
  const lines = [
    `seed ${failing.seed} (${failing.store} store${story ? `, ${failing.story} story` : ""}) broke "${failing.violation?.kind}": ${failing.violation?.message}`,
    `replay: npm run sim -- --seed ${failing.seed}${story}`,
    `shrunk to ${shrunk.tape.length} draws, ${shrunk.steps} steps ("${shrunk.violation?.kind}": ${shrunk.violation?.message})`,
    `replay the shrunk story: npm run sim -- --store ${failing.store}${story} --tape ${encodeTape(shrunk.tape)}`,
    "its trace:",
    ...shrunk.trace.slice(-250).map((l) => `  ${l}`),
  ];
  return lines.join("\n");
}
