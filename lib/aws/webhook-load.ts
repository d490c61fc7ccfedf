/**
 * How the Lambda handler loads the webhook's code (its routes and the approver's page, and the
 * Function URL adapter) where Node runs Waymark unbundled: when the handler is made, so a
 * function that serves no webhook never loads it. A Lambda bundle resolves `#webhook-load` to
 * webhook-load-eager.ts instead (the construct's `waymark-lambda` condition).
 */
export type WebhookCode = [typeof import("../http/handler.ts"), typeof import("./function-url.ts")];

export const loadWebhook = (): Promise<WebhookCode> => Promise.all([import("../http/handler.ts"), import("./function-url.ts")]);
