/**
 * The webhook's shared secret. A list allows rotation: the first secret signs and mints, every
 * secret in the list verifies, so a new secret can be rolled out before the old one is retired.
 */

/** One secret, or several during a rotation (the first one signs). */
export type WebhookSecret = string | readonly string[];

/** Shortest secret accepted: 32 characters (e.g. `openssl rand -hex 32` gives 64). */
export const MIN_SECRET_LENGTH = 32;

/** The secrets as a non-empty list; throws a `RangeError` for a missing or short secret. */
export function secretList(secret: WebhookSecret): [string, ...string[]] {
  const list = typeof secret === "string" ? [secret] : [...secret];
  if (list.length === 0) throw new RangeError("webhook secret: at least one secret is required");
  for (const s of list) {
    if (typeof s !== "string" || s.length < MIN_SECRET_LENGTH) {
      throw new RangeError(`webhook secret: each secret needs at least ${MIN_SECRET_LENGTH} characters`);
    }
  }
  return list as [string, ...string[]];
}
