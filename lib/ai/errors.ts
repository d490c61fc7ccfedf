/**
 * Errors of `waymark/ai`, with literal names and their retry meaning, like the core's.
 */
import { WaymarkError } from "../core/errors.ts";

/**
 * The provider's stream reported an error part: the model step's attempt failed (a half-read
 * answer is never journaled). Retried by the model step's policy.
 */
export class ModelStreamError extends WaymarkError {
  override readonly name = "ModelStreamError" as const;
  readonly retryable = true;
  constructor(readonly detail: string) {
    super(`the model's stream reported an error: ${detail}`);
  }
}

/**
 * The provider refused or failed a model call (the AI SDK's `APICallError`, kept small for the
 * journal: status and address, not the request body). `retryable` is the provider's own verdict:
 * a 429 or a 5xx is retried by the model step's policy, a 400 or a 401 fails it at once.
 */
export class ModelCallError extends WaymarkError {
  override readonly name = "ModelCallError" as const;
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly statusCode: number | undefined,
    /** The endpoint, without its query string (some providers put keys there). */
    readonly url: string,
  ) {
    super(message);
  }
}
