/**
 * The simulator's command (`npm run sim -- …`):
 *
 *   --seed N                 replay one seed; prints its trace, and the shrunk story if it fails
 *   --seeds FROM..TO         run a range of seeds, stop at the first failure
 *   --soak SECONDS [--from N] run seeds from N (default: a random start) until the time is up
 *   --tape T --store S       replay a shrunk tape (as a failure report prints it)
 *   --trace                  print the whole trace of a --seed or --tape run
 *   --story flow             the flow-control story (flow-story.ts) instead of the plain one
 *
 * It prints seeds per second and the seeds run; it exits 1 on a violation.
 */
import { parseArgs } from "node:util";
import { STORIES } from "./flow-story.ts";
import { decodeTape } from "./tape.ts";
import { report, runSeed, runTape, shrink, type SeedResult } from "./simulate.ts";

const { values } = parseArgs({
  options: {
    seed: { type: "string" },
    seeds: { type: "string" },
    soak: { type: "string" },
    from: { type: "string" },
    tape: { type: "string" },
    store: { type: "string" },
    trace: { type: "boolean" },
    survey: { type: "boolean" },
    story: { type: "string" },
  },
});

const story = STORIES.find((s) => s === (values.story ?? "plain"));
if (story === undefined) throw new Error(`--story: one of ${STORIES.join(", ")}`);

async function fail(result: SeedResult): Promise<never> {
  const shrunk = await shrink(result);
  console.log(report(result, shrunk));
  process.exit(1);
}

async function main(): Promise<void> {
  if (values.tape !== undefined) {
    const store = values.store === "sqlite" ? "sqlite" : "memory";
    const result = await runTape(decodeTape(values.tape), store, story);
    if (values.trace || result.violation) console.log(result.trace.join("\n"));
    console.log(result.violation ? `violation ${result.violation.kind}: ${result.violation.message}` : `ok: ${result.summary} (${result.steps} steps)`);
    process.exit(result.violation ? 1 : 0);
  }
  if (values.seed !== undefined) {
    const result = await runSeed(Number(values.seed), undefined, story);
    if (values.trace) console.log(result.trace.join("\n"));
    if (result.violation) await fail(result);
    console.log(`seed ${result.seed} (${result.store}): ok, ${result.summary}, ${result.steps} steps, ${Math.round(result.simulatedMs / 1000)} s simulated`);
    return;
  }
  let from: number;
  let until: (n: number) => boolean;
  if (values.seeds !== undefined) {
    const [a, b] = values.seeds.split("..").map(Number);
    from = a ?? 0;
    const to = b ?? from;
    until = (n) => n <= to;
  } else {
    const seconds = Number(values.soak ?? 60);
    from = values.from === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.from);
    const end = Date.now() + seconds * 1000;
    until = () => Date.now() < end;
  }
  const began = Date.now();
  let n = from;
  let steps = 0;
  const found = new Map<string, { first: number; count: number; message: string }>();
  for (; until(n); n++) {
    const result = await runSeed(n, undefined, story);
    steps += result.steps;
    if (result.violation && values.survey) {
      const seen = found.get(result.violation.kind) ?? { first: n, count: 0, message: result.violation.message };
      seen.count++;
      found.set(result.violation.kind, seen);
      continue;
    }
    if (result.violation) {
      console.log(`after ${n - from} seeds:`);
      await fail(result);
    }
  }
  const seconds = (Date.now() - began) / 1000;
  if (values.survey) {
    for (const [kind, f] of found) console.log(`${kind}: ${f.count} seeds, first ${f.first} (${f.first - from + 1} seeds in): ${f.message}`);
    console.log(`${n - from} seeds (${from}..${n - 1}) in ${seconds.toFixed(1)} s: ${((n - from) / seconds).toFixed(0)} seeds/s`);
    process.exit(found.size > 0 ? 1 : 0);
  }
  console.log(`${n - from} seeds (${from}..${n - 1}) ok in ${seconds.toFixed(1)} s: ${((n - from) / seconds).toFixed(0)} seeds/s, ${steps} steps`);
}

await main();
