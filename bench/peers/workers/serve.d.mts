/** What run.ts passes to a worker's init: ports, URLs, paths. */
export type InitArgs = Record<string, string | number>;

/** The workloads every worker serves; each resolves to its figure (ms, or runs/s for `many`). */
export interface WorkerOps {
  /** Connects to or starts what the worker needs; resolves to a line describing its mode. */
  init(args: InitArgs): Promise<string>;
  seq(args: { n: number }): Promise<number>;
  seqFull?(args: { n: number }): Promise<number>;
  resume(args: { n: number }): Promise<number>;
  many(args: { runs: number; steps: number }): Promise<number>;
  close(args: Record<string, never>): Promise<number>;
}

export declare function serveWorker(ops: WorkerOps): void;
