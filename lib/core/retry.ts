import { type Duration, MAX_DURATION_MS, parseDuration } from "./duration.ts";
import { isRetryable } from "./error-codec.ts";
import { RetryAfterError } from "./errors.ts";
import { unitFromString } from "./random.ts";

/**
 * How a failing step is retried. Delays grow from `initialDelay` by `factor` up to `maxDelay`,
 * spread by `jitter` (a fraction: 0.2 means ±20%). The jitter is derived from run, step and
 * attempt, so it differs between runs but is the same on every replay.
 *
 * @example
 * ```ts
 * await step.run("charge", charge, { retries: { attempts: 5, initialDelay: "2s", maxDelay: "1m" } });
 * ```
 */
export interface RetryOptions {
  /** Total attempts, the first included. Default 3. */
  attempts?: number;
  /** Delay before the second attempt. Default `"1s"`. */
  initialDelay?: Duration;
  /** Growth of the delay per attempt. Default 2. */
  factor?: number;
  /** Cap on one delay. Default `"5m"`. */
  maxDelay?: Duration;
  /** Fraction of the delay to spread by, 0..1. Default 0.2. */
  jitter?: number;
}

export interface RetryPolicy {
  attempts: number;
  initialDelayMs: number;
  factor: number;
  maxDelayMs: number;
  jitter: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, initialDelayMs: 1_000, factor: 2, maxDelayMs: 300_000, jitter: 0.2 };

/** Merges options over a base policy; a bare number means "this many attempts". */
export function resolveRetry(options: RetryOptions | number | undefined, base: RetryPolicy = DEFAULT_RETRY): RetryPolicy {
  if (options === undefined) return base;
  const o = typeof options === "number" ? { attempts: options } : options;
  const policy: RetryPolicy = {
    attempts: o.attempts ?? base.attempts,
    initialDelayMs: o.initialDelay === undefined ? base.initialDelayMs : parseDuration(o.initialDelay),
    factor: o.factor ?? base.factor,
    maxDelayMs: o.maxDelay === undefined ? base.maxDelayMs : parseDuration(o.maxDelay),
    jitter: o.jitter ?? base.jitter,
  };
  if (!Number.isInteger(policy.attempts) || policy.attempts < 1) throw new TypeError(`retries.attempts must be an integer ≥ 1, got ${policy.attempts}`);
  if (!(policy.factor >= 1)) throw new TypeError(`retries.factor must be ≥ 1, got ${policy.factor}`);
  if (!(policy.jitter >= 0 && policy.jitter <= 1)) throw new TypeError(`retries.jitter must be within 0..1, got ${policy.jitter}`);
  return policy;
}

/** The backoff before attempt `failedAttempt + 1`, jittered deterministically by `seed`. */
export function backoffMs(policy: RetryPolicy, failedAttempt: number, seed: string): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** (failedAttempt - 1));
  if (policy.jitter === 0 || base === 0) return Math.round(base);
  const u = unitFromString(`${seed}#${failedAttempt}`);
  return Math.min(policy.maxDelayMs, Math.round(base * (1 - policy.jitter + 2 * policy.jitter * u)));
}

/**
 * When to retry after `err` ended attempt `failedAttempt`, or `undefined` to give up:
 * the error is not retryable or the attempts are spent.
 */
export function nextRetryAt(policy: RetryPolicy, err: unknown, failedAttempt: number, now: number, seed: string): number | undefined {
  if (!isRetryable(err) || failedAttempt >= policy.attempts) return undefined;
  if (err instanceof RetryAfterError) {
    // A provider's Retry-After can say anything: no later than a year away, and a time that is
    // not one falls back to the policy's delay.
    if (err.retryAt !== undefined && Number.isFinite(err.retryAt)) return Math.min(Math.max(now, err.retryAt), now + MAX_DURATION_MS);
    if (err.retryAt !== undefined) return now + backoffMs(policy, failedAttempt, seed);
    return now + (err.retryAfterMs ?? 0);
  }
  return now + backoffMs(policy, failedAttempt, seed);
}
