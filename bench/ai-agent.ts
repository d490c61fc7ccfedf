/**
 * `waymark/ai` (issue 13): what the durable wrapper adds to one model call and to one tool call,
 * on a SQLite journal file, with a realistic 4 KB response. Against the bare AI SDK: the same
 * `generateText` with the same mock model (`ai/test`, the provider stand-in: it answers at once,
 * so the figures are pure overhead), and the same tool's `execute` called directly.
 *
 * Live: each call's step is run and journaled (JSON of the response + request digest, one
 * committed row). Replay: a later invocation returns the recorded call from the journal.
 * Printed, never asserted. Run by `npm run bench`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LanguageModelV3GenerateResult } from "@ai-sdk/provider";
import { generateText, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { Client, createRegistry, durable, Engine } from "../lib/index.ts";
import { durableModel, durableTools } from "../lib/ai/index.ts";
import { jsonBytes } from "../lib/core/json.ts";
import { openLocalDatabase } from "../lib/local/database.ts";
import { SqliteJournalStore } from "../lib/local/sqlite-store.ts";
import { SqliteWakeTable } from "../lib/local/wake-table.ts";
import { systemClock } from "../lib/ports.ts";
import { fmt, repeat, type Sample, table, timed } from "./stats.ts";

const CALLS = 200;
const REPS = { runs: 7, warmup: 2 };
const KB4 = "The order 8472 shipped on the 3rd; the lamp's base was cracked in transit. ".repeat(56).slice(0, 4096);

const usage = { inputTokens: { total: 1200, noCache: 1200, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 900, text: 900, reasoning: 0 } };
const answer = (): LanguageModelV3GenerateResult => ({
  content: [{ type: "text", text: KB4 }],
  finishReason: { unified: "stop", raw: "stop" },
  usage,
  warnings: [],
  response: { id: "resp_1", modelId: "bench-model", timestamp: new Date() },
});
const model = new MockLanguageModelV3({ modelId: "bench-model", doGenerate: async () => answer() });
const ask = { system: "You are the shop's support agent.", prompt: "Where is my lamp? It arrived broken.", maxRetries: 0 };
const lookup = tool({
  description: "Find an order by its id.",
  inputSchema: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, notes: KB4, status: "delivered" }),
});
const callOptions = (i: number) => ({ toolCallId: `c${i}`, messages: [] });

const modelFlow = durable({ name: "ai-bench-model", input: z.object({}) }, async (_in, step) => {
  const durable = durableModel(step, model);
  for (let i = 0; i < CALLS; i++) await generateText({ model: durable, ...ask });
  await step.sleep("rest", "1h");
});
const toolFlow = durable({ name: "ai-bench-tool", input: z.object({}) }, async (_in, step) => {
  const execute = durableTools(step, { lookup }).lookup.execute;
  if (!execute) throw new Error("no execute");
  for (let i = 0; i < CALLS; i++) await execute({ orderId: "8472" }, callOptions(i));
  await step.sleep("rest", "1h");
});

export async function aiBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "waymark-bench-ai-"));
  const db = openLocalDatabase(join(dir, "journal.db"));
  try {
    const store = new SqliteJournalStore(db);
    const ports = { store, wakes: new SqliteWakeTable(db), clock: systemClock, workflows: createRegistry([modelFlow, toolFlow]) };
    const client = new Client(ports);
    const engine = new Engine({ ...ports, owner: "bench", leaseTtlMs: 60_000, maxInvocations: 1_000_000 });
    let n = 0;
    const live = (flow: typeof modelFlow) => async () => {
      const runId = `${flow.name}-${++n}`;
      await client.start(flow, { runId, input: {} });
      return timed(() => engine.invoke(runId));
    };

    const bareModel = await repeat(() => timed(async () => {
      for (let i = 0; i < CALLS; i++) await generateText({ model, ...ask });
    }), REPS);
    const liveModel = await repeat(live(modelFlow), REPS);
    const lastModelRun = `${modelFlow.name}-${n}`;
    const replayModel = await repeat(() => timed(() => engine.invoke(lastModelRun)), REPS);
    const bareTool = await repeat(() => timed(async () => {
      for (let i = 0; i < CALLS; i++) await lookup.execute?.({ orderId: "8472" }, callOptions(i));
    }), REPS);
    const liveTool = await repeat(live(toolFlow), REPS);
    const replayTool = await repeat(() => timed(() => engine.invoke(`${toolFlow.name}-${n}`)), REPS);

    const journal = await store.loadJournal(lastModelRun);
    const modelRecord = journal?.records.find((r) => r.key === "step#model");
    const toolJournal = await store.loadJournal(`${toolFlow.name}-${n}`);
    const toolRecord = toolJournal?.records.find((r) => r.key === "step#tool.lookup");

    const per = (s: Sample) => s.median / CALLS;
    const row = (label: string, s: Sample, bare?: Sample): string[] => [label, fmt(per(s)), fmt(s.min / CALLS), bare === undefined ? "" : `+${fmt(per(s) - per(bare))}`];
    console.log(`\nwaymark/ai: ${CALLS} calls per run, SQLite file, mock model answering 4 KB at once (pure overhead), median of ${REPS.runs} after ${REPS.warmup} warm-up`);
    console.log(
      table(
        ["", "ms/call", "min", "overhead ms/call"],
        [
          row("model call, bare generateText", bareModel),
          row("model call, durableModel, live (run + journal)", liveModel, bareModel),
          row("model call, durableModel, replayed from the journal", replayModel),
          row("tool call, bare execute", bareTool),
          row("tool call, durableTools, live (run + journal)", liveTool, bareTool),
          row("tool call, durableTools, replayed from the journal", replayTool),
        ],
      ),
    );
    console.log(`  journal record of one model call: ${bytes(modelRecord)} (response + request digest); of one tool call: ${bytes(toolRecord)}`);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function bytes(record: unknown): string {
  return record === undefined ? "?" : `${(jsonBytes(record) / 1024).toFixed(1)} KiB`;
}

// Alone: node --conditions=waymark-source --import tsx bench/ai-agent.ts
if (import.meta.url === `file://${process.argv[1]}`) await aiBench();
