/**
 * OpenTelemetry spans, when the application has `@opentelemetry/api` (an optional peer
 * dependency, imported on the first invocation; without it nothing is loaded and nothing is
 * traced). One span per invocation, one per executed attempt of a step (its child), with run
 * and step attributes. An invocation links to what woke it (the `traceparent` its wake carried)
 * and to the run's previous invocation in this process, so a run's invocations, separated by
 * sleeps and waits, stay connected without one trace spanning days.
 *
 * The API is used through the few members below, so nothing here needs its types.
 */
import type { EngineHooks } from "../core/engine.ts";
import type { Wake, WakeQueue } from "../ports.ts";

type Attributes = Record<string, string | number | boolean>;
/** The parts of `@opentelemetry/api` Waymark uses. */
export interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}
export interface OtelSpan {
  spanContext(): OtelSpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  end(): void;
}
/** An OpenTelemetry context: opaque here. */
export type OtelContext = object;
export interface OtelTracer {
  startSpan(name: string, options?: { kind?: number; attributes?: Attributes; links?: Array<{ context: OtelSpanContext; attributes?: Attributes }> }, context?: OtelContext): OtelSpan;
}
export interface OtelApi {
  trace: { getTracer(name: string, version?: string): OtelTracer; setSpan(context: OtelContext, span: OtelSpan): OtelContext };
  context: { active(): OtelContext; with<T>(context: OtelContext, fn: () => T): T };
  SpanStatusCode: { ERROR: number };
  SpanKind: { INTERNAL: number; CONSUMER: number };
}

/** Imports `@opentelemetry/api` if the application has it; undefined otherwise. */
export async function loadOpenTelemetry(): Promise<OtelApi | undefined> {
  try {
    // Inside try: a bundler leaves it out (and the import fails here) when it is not installed.
    const api: OtelApi = await import("@opentelemetry/api");
    return api;
  } catch {
    return undefined;
  }
}

/**
 * OpenTelemetry tracing wired into an engine: the hooks to give it, and the `traceparent` of the
 * invocation in progress.
 */
export interface Tracing {
  /** Give these to the engine. */
  hooks: EngineHooks;
  /** The W3C `traceparent` of the run's invocation in progress here, to ride on the wakes it schedules. */
  traceparent(runId: string): string | undefined;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** Runs whose last invocation span this process remembers (for the link), at most. */
const REMEMBERED = 10_000;

/**
 * Tracing hooks over an OpenTelemetry API loaded on first use.
 *
 * @example
 * ```ts
 * const tracing = createTracing(loadOpenTelemetry);
 * const engine = new Engine({ ...ports, wakes: traceWakes(wakes, tracing), hooks: tracing.hooks });
 * ```
 */
export function createTracing(load: () => Promise<OtelApi | undefined>, tracerName = "waymark"): Tracing {
  let loading: Promise<OtelApi | undefined> | undefined;
  let tracer: OtelTracer | undefined;
  const api = async () => {
    loading ??= load().then(
      (otel) => {
        tracer = otel?.trace.getTracer(tracerName);
        return otel;
      },
      () => undefined,
    );
    return loading;
  };
  const active = new Map<string, { span: OtelSpan; context: OtelContext }>();
  const previous = new Map<string, OtelSpanContext>();

  const traced = async <T>(otel: OtelApi, span: OtelSpan, context: OtelContext, body: () => Promise<T>, failed: (value: T) => string | undefined): Promise<T> => {
    try {
      const value = await otel.context.with(context, body);
      const failure = failed(value);
      if (failure !== undefined) span.setStatus({ code: otel.SpanStatusCode.ERROR, message: failure });
      return value;
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: otel.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  };

  const hooks: EngineHooks = {
    invocation: async (runId, options, body) => {
      const otel = await api();
      if (!otel || !tracer) return body();
      const links: Array<{ context: OtelSpanContext; attributes: Attributes }> = [];
      const cause = parseTraceparent(options.traceparent);
      if (cause) links.push({ context: cause, attributes: { "waymark.link": "wake" } });
      const before = previous.get(runId);
      if (before && before.spanId !== cause?.spanId) links.push({ context: before, attributes: { "waymark.link": "previous-invocation" } });
      const span = tracer.startSpan("waymark.invocation", { kind: otel.SpanKind.CONSUMER, attributes: { "waymark.run.id": runId }, links }, otel.context.active());
      const context = otel.trace.setSpan(otel.context.active(), span);
      active.set(runId, { span, context });
      try {
        return await traced(otel, span, context, body, (result) => {
          const status = statusOf(result);
          if (status !== undefined) span.setAttribute("waymark.invocation.outcome", status);
          return status === "failed" ? "the run failed" : undefined;
        });
      } finally {
        active.delete(runId);
        previous.delete(runId);
        previous.set(runId, span.spanContext());
        if (previous.size > REMEMBERED) previous.delete(previous.keys().next().value ?? "");
      }
    },
    attempt: async (info, body) => {
      const otel = await api();
      if (!otel || !tracer) return body();
      const parent = active.get(info.runId);
      parent?.span.setAttribute("waymark.workflow", info.workflow);
      const attributes = { "waymark.run.id": info.runId, "waymark.workflow": info.workflow, "waymark.step.id": info.stepId, "waymark.step.attempt": info.attempt };
      const base = parent?.context ?? otel.context.active();
      const span = tracer.startSpan(`waymark.step ${info.stepId}`, { kind: otel.SpanKind.INTERNAL, attributes }, base);
      return traced(otel, span, otel.trace.setSpan(base, span), body, () => undefined);
    },
  };
  return {
    hooks,
    traceparent: (runId) => {
      const c = active.get(runId)?.span.spanContext();
      return c ? `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, "0")}` : undefined;
    },
  };
}

/**
 * A wake queue whose wakes carry the `traceparent` of the invocation that scheduled them, so
 * the invocation they cause links back to it.
 *
 * @example
 * ```ts
 * const engine = new Engine({ ...ports, wakes: traceWakes(wakes, tracing), hooks: tracing.hooks });
 * ```
 */
export function traceWakes(wakes: WakeQueue, tracing: Pick<Tracing, "traceparent">): WakeQueue {
  return {
    schedule: (wake: Wake) => {
      const traceparent = wake.traceparent ?? tracing.traceparent(wake.runId);
      return wakes.schedule(traceparent === undefined ? wake : { ...wake, traceparent });
    },
    cancel: (runId, key) => wakes.cancel(runId, key),
  };
}

/** The span context a W3C `traceparent` names, if it is one. */
export function parseTraceparent(value: string | undefined): OtelSpanContext | undefined {
  const m = TRACEPARENT.exec(value ?? "");
  if (!m?.[1] || !m[2] || !m[3] || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined;
  return { traceId: m[1], spanId: m[2], traceFlags: Number.parseInt(m[3], 16), isRemote: true };
}

function statusOf(result: unknown): string | undefined {
  const status = typeof result === "object" && result !== null ? (result as { status?: unknown }).status : undefined;
  return typeof status === "string" ? status : undefined;
}
