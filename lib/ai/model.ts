/**
 * A language model whose calls are journaled steps. Each `doGenerate` / `doStream` the AI SDK
 * makes (one per agent turn) runs once per run: the response is recorded with a digest of its
 * request, and a replay hands the SDK the recorded response without calling the provider.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Middleware } from "@ai-sdk/provider";
import type { Step, StepRunOptions } from "../core/definition.ts";
import { NonDeterminismError } from "../core/errors.ts";
import { createJsonLogger } from "../observe/logger.ts";
import { diffRequests, digestRequest, type RequestDigest } from "./digest.ts";
import { collectStream, decodeGenerate, decodeStream, encodeGenerate, type RecordedGenerate, type RecordedStream } from "./model-record.ts";
import { toStepError } from "./provider-errors.ts";
import { nextStepId } from "./step-ids.ts";

/** A replayed model call whose request is not the one recorded. */
export interface ModelRequestChange {
  runId: string;
  /** The model call's step id (`model`, `model#2`, …). */
  stepId: string;
  /** What differs, e.g. `message 0 (system)`, `tool issue_refund's definition`, `the call settings`. */
  changes: string[];
}

/**
 * A language model of the AI SDK's provider interface: `LanguageModelV3` (the providers of ai 6)
 * or `LanguageModelV4` (those of ai 7). Only what Waymark calls is named, so that one declaration
 * fits both.
 */
export interface LanguageModelLike {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: never): PromiseLike<unknown>;
  doStream(options: never): PromiseLike<unknown>;
}

/**
 * Options of `durableModel`: the model calls' step name, retries, timeout, and what a changed
 * request on replay does.
 */
export interface DurableModelOptions extends Pick<StepRunOptions, "retries" | "timeout"> {
  /** The model calls' step name; the n-th call is `name#n`. Default `"model"`. */
  name?: string;
  /**
   * What a replayed call whose request changed does (a prompt, a tool or a setting edited in a
   * deploy while runs were in flight). `"warn"` (the default): the recorded response is used and
   * a warning names the step and what changed. `"strict"`: the call throws
   * `NonDeterminismError`, which fails the run. A function: called instead of warning.
   */
  onRequestChange?: "warn" | "strict" | ((change: ModelRequestChange) => void);
  /** Where the warning goes. Default: Waymark's JSON logger (stdout). */
  logger?: { warn(message: string, attributes: Record<string, unknown>): void };
}

interface ModelRecord<T> {
  request: RequestDigest;
  response: T;
}

/**
 * Makes a language model durable inside a workflow: every call the AI SDK makes through it
 * (`generateText`, `streamText`, agents) is one journaled step, retried by Waymark's policy and
 * never repeated once recorded. A streamed response is collected whole into the journal, then
 * streamed to the SDK from there. The model keeps its interface version (3 for ai 6's
 * providers, 4 for ai 7's), so what is journaled is what the provider answered, whichever
 * version of `ai` drives it; to add other middleware, wrap the durable model
 * (`wrapLanguageModel({ model: durableModel(step, base), middleware })`), which keeps it
 * nearest the provider.
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { openai } from "@ai-sdk/openai";
 * import { durableModel, durableTools } from "waymark/ai";
 *
 * export const agent = durable({ name: "agent", input: Ticket }, async (ticket, step) => {
 *   const { text } = await generateText({
 *     model: durableModel(step, openai("gpt-4.1"), { retries: 5, timeout: "2m" }),
 *     tools: durableTools(step, tools),
 *     stopWhen: stepCountIs(8),
 *     prompt: ticket.message,
 *   });
 *   return { answer: text };
 * });
 * ```
 */
export function durableModel<M extends LanguageModelLike>(step: Step, model: M, options: DurableModelOptions = {}): M {
  const calls = durableCalls(step, options);
  const inner = model as unknown as LanguageModelV3;
  // Everything but the two calls is the model's own (as the AI SDK's own version adapters do).
  return new Proxy(model, {
    get(target, property) {
      if (property === "doGenerate") return (params: LanguageModelV3CallOptions) => calls.generate(inner, params);
      if (property === "doStream") return (params: LanguageModelV3CallOptions) => calls.stream(inner, params);
      return (target as Record<PropertyKey, unknown>)[property];
    },
  });
}

/**
 * The same as {@link durableModel}, as AI SDK middleware (version 3, for ai 6's
 * `wrapLanguageModel`), to compose with other middleware: put it last, nearest the provider, so
 * that what it records is what the provider answered. With ai 7, wrap {@link durableModel} instead.
 *
 * @example
 * ```ts
 * const model = wrapLanguageModel({ model: openai("gpt-4.1"), middleware: [guardrails, durableMiddleware(step)] });
 * ```
 */
export function durableMiddleware(step: Step, options: DurableModelOptions = {}): LanguageModelV3Middleware {
  const calls = durableCalls(step, options);
  return {
    specificationVersion: "v3",
    wrapGenerate: ({ model, params }) => calls.generate(model, params),
    wrapStream: ({ model, params }) => calls.stream(model, params),
  };
}

/** A model's two calls as journaled steps (typed as version 3; a version 4 model's values pass through as they are). */
function durableCalls(step: Step, options: DurableModelOptions) {
  const name = options.name ?? "model";
  const runOptions: StepRunOptions = { ...(options.retries === undefined ? {} : { retries: options.retries }), ...(options.timeout === undefined ? {} : { timeout: options.timeout }) };

  async function journaled<T>(model: LanguageModelV3, params: LanguageModelV3CallOptions, call: (params: LanguageModelV3CallOptions) => Promise<T>): Promise<T> {
    const stepId = nextStepId(step, name);
    const request = digestRequest(model, params);
    const record = await step.run<ModelRecord<T>>(
      name,
      async ({ signal }) => {
        const abortSignal = params.abortSignal === undefined ? signal : AbortSignal.any([params.abortSignal, signal]);
        try {
          return { request, response: await call({ ...params, abortSignal }) };
        } catch (err) {
          throw toStepError(err, Date.now());
        }
      },
      runOptions,
    );
    const changes = diffRequests(record.request, request);
    if (changes.length > 0) report({ runId: step.runId, stepId, changes });
    return record.response;
  }

  function report(change: ModelRequestChange): void {
    const mode = options.onRequestChange ?? "warn";
    if (typeof mode === "function") return mode(change);
    if (mode === "strict") throw new NonDeterminismError(change.stepId, "a model call with another request", `changed ${change.changes.join(", ")}`);
    const logger = options.logger ?? (defaultLogger ??= createJsonLogger());
    logger.warn(`model call "${change.stepId}" replayed its recorded response, but the request changed: ${change.changes.join(", ")}`, { ...change });
  }

  return {
    generate: async (model: LanguageModelV3, params: LanguageModelV3CallOptions) => decodeGenerate(await journaled<RecordedGenerate>(model, params, async (p) => encodeGenerate(await model.doGenerate(p)))),
    stream: async (model: LanguageModelV3, params: LanguageModelV3CallOptions) => decodeStream(await journaled<RecordedStream>(model, params, async (p) => collectStream(await model.doStream(p)))),
  };
}

let defaultLogger: ReturnType<typeof createJsonLogger> | undefined;
