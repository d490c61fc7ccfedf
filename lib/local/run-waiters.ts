/**
 * The callers of `LocalRuntime.waitForRun` waiting for an invocation of a run to end: each is
 * told as soon as one ends in this runtime (the wake pool's `onFree`), or after its own poll
 * interval, for an end made elsewhere (another worker on the journal, a cancel).
 *
 * @example
 * ```ts
 * const waiters = new RunWaiters();
 * const next = waiters.next("order-8472", 10);
 * waiters.ended("order-8472"); // next.promise resolves now, not in 10 ms
 * await next.promise;
 * ```
 */
export class RunWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Resolves once an invocation of `runId` here ends, or after `ms`; `cancel` stops waiting. */
  next(runId: string, ms: number): { promise: Promise<void>; cancel: () => void } {
    let waiters = this.waiting.get(runId);
    if (!waiters) this.waiting.set(runId, (waiters = new Set()));
    const those = waiters;
    let done!: () => void;
    const promise = new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(), ms);
      done = () => {
        clearTimeout(timer);
        those.delete(done);
        if (those.size === 0 && this.waiting.get(runId) === those) this.waiting.delete(runId);
        resolve();
      };
    });
    those.add(done);
    return { promise, cancel: done };
  }

  /** An invocation of `runId` ended here: whoever waits for the run looks again. */
  ended(runId: string): void {
    const waiters = this.waiting.get(runId);
    if (waiters) for (const done of [...waiters]) done();
  }
}
