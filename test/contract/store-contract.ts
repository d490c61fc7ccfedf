/**
 * The one contract every {@link JournalStore} passes (docs/architecture.md, "Journal store contract").
 * Each store's test file calls {@link journalStoreContract} with a factory; the store may be
 * shared by all tests (fresh run ids keep them apart), so a DynamoDB Local table can back it.
 */
import { afterAll, beforeAll, describe } from "vitest";
import type { JournalStore } from "../../lib/ports.ts";
import { concurrencyTests } from "./store-concurrency.ts";
import { leaseTests } from "./store-leases.ts";
import { listingTests } from "./store-listing.ts";
import { runAndRecordTests } from "./store-records.ts";
import { retryTests } from "./store-retries.ts";
import { incarnationTests } from "./store-incarnations.ts";
import { flowTests } from "./store-flow.ts";
import { retentionTests } from "./store-retention.ts";

export { journalWakeQueueContract } from "./wake-contract.ts";

export interface StoreHarness {
  store: JournalStore;
  close?: () => Promise<void>;
}

/**
 * Declares `JournalStore contract: <name>`. `make` is called once for the whole suite.
 *
 * @example
 * ```ts
 * journalStoreContract("memory", async () => ({ store: new MemoryJournalStore() }));
 * ```
 */
export function journalStoreContract(name: string, make: () => Promise<StoreHarness>): void {
  describe(`JournalStore contract: ${name}`, () => {
    let harness: StoreHarness | undefined;
    beforeAll(async () => {
      harness = await make();
    });
    afterAll(async () => {
      await harness?.close?.();
    });
    const store = (): JournalStore => {
      if (!harness) throw new Error("the store factory has not run");
      return harness.store;
    };

    describe("runs and records", () => runAndRecordTests(store));
    describe("leases", () => leaseTests(store));
    describe("listing", () => listingTests(store));
    describe("concurrency", () => concurrencyTests(store));
    describe("retries after a lost response", () => retryTests(store));
    describe("incarnations", () => incarnationTests(store));
    describe("flow control", () => flowTests(store));
    describe("retention", () => retentionTests(store));
  });
}
