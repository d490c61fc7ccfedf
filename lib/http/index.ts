/** The webhook: a transport-neutral HTTP handler, request signing and approval tokens. */
export { createHttpHandler, type HttpHandlerOptions } from "./handler.ts";
export { createApprovalLinks, verifyApprovalToken, DEFAULT_LINK_LIFETIME_MS, type ApprovalLinksOptions, type TokenVerification, type TokenFailure } from "./tokens.ts";
export { signRequest, verifyRequestSignature, SIGNATURE_HEADER, TIMESTAMP_HEADER, DEFAULT_REPLAY_WINDOW_MS, type SignedParts } from "./signing.ts";
export { type WebhookSecret, MIN_SECRET_LENGTH } from "./secret.ts";
export { DEFAULT_MAX_BODY_BYTES } from "./body.ts";
export type { HttpRequest, HttpResponse, HttpHandler } from "./types.ts";
