import type { PayloadStore } from "../ports.ts";

/**
 * Payloads by reference in memory, for tests: counts its reads and writes so a test can see
 * what went by reference and when it was read back.
 *
 * @example
 * ```ts
 * const payloads = new MemoryPayloadStore();
 * const rt = createTestRuntime({ workflows: [report], payloads: { store: payloads } });
 * await rt.start(report, { runId: "r-1", input: {} });
 * expect(payloads.puts).toBe(1);
 * ```
 */
export class MemoryPayloadStore implements PayloadStore {
  readonly objects = new Map<string, Uint8Array>();
  puts = 0;
  gets = 0;

  async put(key: string, body: Uint8Array): Promise<void> {
    this.puts++;
    // Content-addressed: a key already there holds these bytes; a retried put changes nothing.
    if (!this.objects.has(key)) this.objects.set(key, body.slice());
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    this.gets++;
    return this.objects.get(key)?.slice();
  }
}
