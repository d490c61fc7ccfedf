/**
 * The JSON Schema of a user's schema, for forms. User schemas are Standard Schema objects, so a
 * JSON Schema is found, in order: on the schema itself (`~standard.jsonSchema`, the Standard
 * JSON Schema interface that classic zod and others implement), else through zod's own
 * `toJSONSchema` for zod schemas (`zod/mini` included) when zod can be loaded from here. Waymark
 * bundles no zod: in a Lambda bundle without `node_modules`, a `zod/mini` schema has no JSON
 * Schema and the page falls back to approve / reject buttons.
 */
import type { StandardSchemaV1 } from "../core/standard-schema.ts";

/** The part of JSON Schema the forms read. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  title?: string;
  description?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
}

/** The Standard JSON Schema interface (standardschema.dev/json-schema), as far as it is used here. */
interface WithJsonSchema {
  readonly "~standard": { readonly jsonSchema?: { readonly input?: (options: { target: string }) => unknown } };
}

type ToJsonSchema = (schema: unknown, options: { io: "input"; unrepresentable: "any" }) => unknown;

const cache = new WeakMap<object, JsonSchema | null>();
// A non-literal specifier: bundlers leave it alone, so no zod is pulled into a Lambda bundle.
const ZOD_CORE = ["zod", "v4", "core"].join("/");
let zodToJsonSchema: Promise<ToJsonSchema | undefined> | undefined;

/**
 * The schema's JSON Schema (input side), or `undefined` when none can be derived.
 *
 * @example
 * ```ts
 * const json = await jsonSchemaOf(z.object({ approved: z.boolean() }));
 * // { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"], … }
 * ```
 */
export async function jsonSchemaOf(schema: StandardSchemaV1): Promise<JsonSchema | undefined> {
  const known = cache.get(schema);
  if (known !== undefined) return known ?? undefined;
  const derived = (await derive(schema)) ?? null;
  cache.set(schema, derived);
  return derived ?? undefined;
}

async function derive(schema: StandardSchemaV1): Promise<JsonSchema | undefined> {
  try {
    const own = (schema as unknown as WithJsonSchema)["~standard"].jsonSchema?.input?.({ target: "draft-2020-12" });
    if (isSchema(own)) return own;
    if (schema["~standard"].vendor !== "zod") return undefined;
    zodToJsonSchema ??= import(ZOD_CORE).then(
      (m: { toJSONSchema?: ToJsonSchema }) => m.toJSONSchema,
      () => undefined,
    );
    const convert = await zodToJsonSchema;
    const out = convert?.(schema, { io: "input", unrepresentable: "any" });
    return isSchema(out) ? out : undefined;
  } catch {
    // A schema that cannot be expressed (a transform, a custom check): no form, buttons instead.
    return undefined;
  }
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
