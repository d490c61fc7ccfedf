/**
 * The approval links of a runtime that has no webhook secret: a wait that asks for one
 * (`waitForSignal({ notify })`) fails as a definition error, and the message names where this
 * runtime takes its secret. Each runtime passes its own hint.
 */
import { WorkflowDefinitionError } from "../core/errors.ts";
import type { ApprovalLinks } from "../ports.ts";

/** Where each runtime takes its webhook secret, as the error says it. */
export const SECRET_HINTS = {
  test: "pass one to the test runtime: createTestRuntime({ workflows, webhook: { secret } }) (any string of 32 or more characters)",
  local: "pass one to the local runtime: createLocalRuntime({ workflows, webhook: { secret } }) (waymark dev does: $WAYMARK_WEBHOOK_SECRET, else .waymark/dev-secret)",
  aws: "this function was deployed without its webhook secret: keep the DurableFunction construct's `webhook` on (the default), or set WAYMARK_WEBHOOK_SECRET",
} as const;

/**
 * Links that cannot be minted: each `mint` throws `WorkflowDefinitionError` with `hint`.
 *
 * @example
 * ```ts
 * const links = options.webhook ? createApprovalLinks(options.webhook) : linksWithoutSecret(SECRET_HINTS.test);
 * ```
 */
export function linksWithoutSecret(hint: string): ApprovalLinks {
  return {
    mint: (claims) => {
      throw new WorkflowDefinitionError(`wait "${claims.waitId}" asks for an approval link (notify), but this runtime has no webhook secret configured: ${hint}`);
    },
  };
}
