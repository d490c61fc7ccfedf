/**
 * The approval-link port: capability links for waits (part of the ports, `lib/ports.ts`).
 */
/** What a capability link is bound to. */
export interface LinkClaims {
  runId: string;
  waitId: string;
  signal: string;
  /** The run's `createdAt`: binds the link to this run, not to a later run that reuses its id. */
  runCreatedAt: number;
  /** When the wait was recorded; the link's lifetime counts from here (deterministic on replay). */
  issuedAt: number;
  /** Minting: the wait's timeout, if any. Verified: the link's expiry (the sooner of that and its maximum lifetime). */
  expiresAt?: number;
  /** The one approver the link speaks for; a delivery through it is recorded as sent by them. */
  approver?: string;
}

/** Mints capability links for waits (signed tokens); deterministic for the same claims. */
export interface ApprovalLinks {
  /** `expiresAt` is the link's own expiry, never later than the claims' `expiresAt`. */
  mint(claims: LinkClaims): { token: string; url: string | undefined; expiresAt: number };
}
