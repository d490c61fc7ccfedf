/**
 * Golden histories: journals recorded from real runs of the example workflows, kept in this
 * folder as JSON. The test replays today's code against them; a change that would break runs
 * already in flight (a renamed step, a reordered call, a new record format) fails it.
 *
 * Re-record only on purpose (a deliberate, versioned change):
 *   node --conditions=waymark-source --import tsx test/golden/golden.ts
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestRuntime } from "waymark/testing";
import type { RunMeta, StoredRecord } from "waymark";
import { orderFlow, type Order } from "../../functions/order-flow.ts";

export interface GoldenHistory {
  description: string;
  run: RunMeta;
  records: StoredRecord[];
}

export const ORDER: Order = { orderId: "8472", sku: "LAMP-01", quantity: 1, amount: 129.5, email: "kim@example.com", address: "1 Harbour St" };

/** The histories, by file name: a run waiting for approval, and one that finished. */
export async function recordGoldenHistories(): Promise<Record<string, GoldenHistory>> {
  process.env.WAYMARK_DEMO_DIR = mkdtempSync(join(tmpdir(), "waymark-golden-"));
  const rt = createTestRuntime({ workflows: [orderFlow], start: new Date("2026-01-01T00:00:00Z") });
  await rt.start(orderFlow, { runId: "golden-waiting", input: ORDER });
  await rt.start(orderFlow, { runId: "golden-shipped", input: ORDER });
  await rt.signal("golden-shipped", "approval", { approved: true, approver: "ana" }, { signalId: "golden-approval" });
  const out: Record<string, GoldenHistory> = {};
  for (const [file, runId, description] of [
    ["order-flow.waiting.history.json", "golden-waiting", "order-flow suspended at its approval wait"],
    ["order-flow.shipped.history.json", "golden-shipped", "order-flow approved and completed"],
  ] as const) {
    const journal = await rt.store.loadJournal(runId);
    if (!journal) throw new Error(`no journal for ${runId}`);
    out[file] = { description, run: journal.run, records: journal.records };
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = fileURLToPath(new URL(".", import.meta.url));
  for (const [file, history] of Object.entries(await recordGoldenHistories())) {
    writeFileSync(join(dir, file), `${JSON.stringify(history, null, 2)}\n`);
    console.log(`wrote ${file}`);
  }
}
