/**
 * `waymark/cdk`: the `DurableFunction` construct, the `DurableEngine` several functions can
 * share, and the pieces they are made of.
 *
 * @example
 * ```ts
 * import { DurableFunction } from "waymark/cdk";
 * new DurableFunction(stack, "Orders", { entry: "functions/order-flow.ts", handler: "orderFlow" });
 * ```
 */
export { DurableFunction, DEFAULT_RUNTIME, type DurableFunctionProps } from "./durable-function.ts";
export { DurableEngine, type DurableEngineProps, type EngineMember } from "./engine.ts";
export { WebhookSecret, SECRET_PARAMETER_ACTIONS, type WebhookSecretOption } from "./webhook-secret.ts";
export { DurableAlarms, ALARM_SETS, type AlarmSet, type DurableAlarmsProps } from "./alarms.ts";
export { checkTracingPackage, durableBundling, trimDefines, ESM_REQUIRE_BANNER, SOURCE_MAP_NODE_OPTIONS, TRACING_PACKAGE, type TrimOptions } from "./bundling.ts";
export { journalTable } from "./journal-table.ts";
export { WakeQueues, MAX_MESSAGE_BYTES, type WakeQueuesProps } from "./wake-queues.ts";
export {
  durableFunctionStatements,
  schedulerDeliveryRole,
  schedulesInGroup,
  JOURNAL_ACTIONS,
  INDEX_ACTIONS,
  SCHEDULE_ACTIONS,
  type DurableGrants,
} from "./permissions.ts";
export { Watchdog, WATCHDOG_EVENT, type WatchdogProps } from "./watchdog.ts";
export { Retention, STREAM_ACTIONS, TTL_REMOVE_FILTER, type RetentionProps } from "./retention.ts";
