/**
 * A run's cancellation, as one execution sees it. Requested (the journal's `cancel` record, or
 * a request noticed while running), then delivered once: thrown into the workflow as
 * {@link CancelledError} at the first point that waits or starts a step, or out of the step
 * bodies running when the request came (their `signal` aborts). After delivery, steps run
 * normally: they are the workflow's compensations. Where it was delivered is journaled (a step
 * failed with CancelledError, or a wait or sleep resolved `cancelled`), so replay agrees.
 */
import { CancelledError } from "./errors.ts";

/** What a step attempt listens to for the run's cancellation (see attempt.ts). */
export interface CancelSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Calls `listener` once if the cancellation comes; returns how to stop listening. */
  subscribe(listener: (reason: unknown) => void): () => void;
}

export class Cancellation {
  private requested: string | undefined;
  private delivered = false;
  private source = new Source();

  constructor(reason?: string) {
    this.requested = reason;
  }

  /** Requested and not yet thrown into the workflow. */
  get pending(): boolean {
    return this.requested !== undefined && !this.delivered;
  }

  get wasDelivered(): boolean {
    return this.delivered;
  }

  get reason(): string {
    return this.requested ?? "cancelled";
  }

  /** What step attempts started now run under: fired by a request that comes while they run. */
  get signal(): CancelSource {
    return this.source;
  }

  /** A request noticed while running: the attempts running now are aborted. False if already known. */
  request(reason: string): boolean {
    if (this.requested !== undefined) return false;
    this.requested = reason;
    this.source.fire(new CancelledError(reason));
    return true;
  }

  /** Thrown into the workflow: from now on steps run normally (and under a fresh signal). */
  markDelivered(): void {
    if (this.delivered) return;
    this.delivered = true;
    this.source = new Source();
  }

  error(): CancelledError {
    return new CancelledError(this.reason);
  }
}

/** One listener set for every running attempt (an AbortSignal would warn past ten listeners). */
class Source implements CancelSource {
  aborted = false;
  reason: unknown;
  private readonly listeners = new Set<(reason: unknown) => void>();

  subscribe(listener: (reason: unknown) => void): () => void {
    if (this.aborted) {
      listener(this.reason);
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  fire(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    for (const l of [...this.listeners]) l(reason);
    this.listeners.clear();
  }
}
