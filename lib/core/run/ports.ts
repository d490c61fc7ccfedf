/** What the run protocol works with: the store (its only writer), the wake queue, the clock, the workflows hosted here. */
import type { Clock, JournalStore, WakeQueue } from "../../ports.ts";
import type { RemoteChildren } from "../children.ts";
import type { Registry } from "../registry.ts";

/** A structured log line (the engine's `LogEntry`). */
export type RunLog = (entry: { event: string; runId: string } & Record<string, unknown>) => void;

export interface RunPorts {
  store: JournalStore;
  wakes: WakeQueue;
  clock: Clock;
  workflows: Registry;
  /** Children hosted by other deployments, and parents in them (children.ts). */
  remote?: RemoteChildren | undefined;
  log?: RunLog | undefined;
}
