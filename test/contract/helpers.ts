/**
 * Shared pieces of the contract suites. A store may be shared by every test (a DynamoDB Local
 * table is), so every test names its runs with a random suffix and never assumes it is alone.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { JournalStore, ListQuery, RunMeta } from "../../lib/ports.ts";

/** A plausible epoch-ms "now" for tests that do not care about absolute time. */
export const T = 1_700_000_000_000;

/** A run id no other test (or earlier run of this suite) uses. */
export function freshId(label: string): string {
  return `${label}-${randomUUID()}`;
}

/** Creates a run with a fresh id and returns the id. */
export async function newRun(store: JournalStore, label: string, createdAt = T, input: unknown = { label }): Promise<string> {
  const runId = freshId(label);
  const res = await store.createRun({ runId, workflow: "contract-flow", input, createdAt });
  expect(res.created).toBe(true);
  return runId;
}

/** Creates a run and takes its lease; returns the id and the token. */
export async function leasedRun(store: JournalStore, label: string, owner = "owner-a", now = T): Promise<{ runId: string; token: number }> {
  const runId = await newRun(store, label, now);
  const res = await store.acquireLease(runId, { owner, now, ttlMs: 30_000 });
  if (!res.acquired) throw new Error(`lease on a new run refused: ${res.reason}`);
  return { runId, token: res.lease.token };
}

/** Runs a mutation of a returned object; a store may hand out frozen objects, which refuse it. */
export function tryMutate(mutate: () => void): void {
  try {
    mutate();
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
  }
}

/** A random integer in [lo, lo + span): a time window of its own for one test. */
export function randomBase(lo: number, span: number): number {
  return lo + Math.floor(Math.random() * span);
}

/** createdAt descending, then runId descending: the order of `listRuns`. */
export function newestFirst(a: RunMeta, b: RunMeta): number {
  return b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);
}

/**
 * Reads every page of a listing, checking on the way that a page never exceeds the limit and
 * that a cursor always leads to a non-empty page (it is absent when there is no further page).
 */
export async function listAll(store: JournalStore, query: Omit<ListQuery, "cursor" | "limit">, limit: number): Promise<RunMeta[]> {
  const runs: RunMeta[] = [];
  let cursor: string | undefined;
  for (let pages = 0; ; pages++) {
    if (pages > 10_000) throw new Error("listRuns never stopped returning cursors");
    const page = await store.listRuns({ ...query, limit, ...(cursor === undefined ? {} : { cursor }) });
    expect(page.runs.length).toBeLessThanOrEqual(limit);
    if (cursor !== undefined) expect(page.runs.length, "a cursor promised a further page").toBeGreaterThan(0);
    runs.push(...page.runs);
    if (page.cursor === undefined) return runs;
    expect(typeof page.cursor).toBe("string");
    cursor = page.cursor;
  }
}
