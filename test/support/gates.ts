/** Step bodies that wait until the test lets them finish: one gate per call, by label, in call order. */
export class Gates {
  private readonly calls = new Map<string, Array<{ open: (value?: unknown) => void }>>();
  private readonly waiters: Array<() => void> = [];

  /** A body's wait: resolves when the test opens this call of `label`. */
  wait(label: string): Promise<unknown> {
    return new Promise((resolve) => {
      const list = this.calls.get(label) ?? [];
      list.push({ open: resolve });
      this.calls.set(label, list);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** How many calls of `label` have started. */
  count(label: string): number {
    return this.calls.get(label)?.length ?? 0;
  }

  /** Resolves once `n` calls of `label` have started (fails after 60 s: a hang, not a slow machine). */
  async started(label: string, n = 1): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (this.count(label) < n) {
      if (Date.now() > deadline) throw new Error(`gate "${label}": ${this.count(label)} of ${n} calls started after 60 s`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 20);
      });
    }
  }

  /** Lets call `index` (0-based) of `label` finish with `value`. */
  open(label: string, index: number, value?: unknown): void {
    const call = this.calls.get(label)?.[index];
    if (!call) throw new Error(`gate "${label}": no call ${index}`);
    call.open(value);
  }
}

/**
 * Settles a promise or fails after `ms` (at least a minute): a hang becomes a clear test failure.
 * The floor keeps a busy machine (two suites at once on two cores) from reading as a hang.
 */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  ms = Math.max(ms, 60_000);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
