/**
 * `#webhook-load` in a Lambda bundle (the construct's `waymark-lambda` condition): the webhook's
 * code imported statically, which a bundler does not wrap in lazy initialisers. A function built
 * with `webhook: false` never calls this (lambda.ts, behind the `WAYMARK_WEBHOOK` define), so the
 * bundler leaves these modules out (the package has no side effects).
 */
import * as http from "../http/handler.ts";
import * as functionUrl from "./function-url.ts";
import type { WebhookCode } from "./webhook-load.ts";

export const loadWebhook = async (): Promise<WebhookCode> => [http, functionUrl];
