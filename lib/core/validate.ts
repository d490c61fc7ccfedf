/**
 * Validation of user values (run inputs, signal payloads) through the Standard Schema
 * interface, with the same result shape as zod's `safeParse`.
 */
import { InvalidInputError, WorkflowDefinitionError } from "./errors.ts";
import type { StandardSchemaV1 } from "./standard-schema.ts";
import { zodIssues } from "./zod-issues.ts";

export type Validation<T> = { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<StandardSchemaV1.Issue> } };

/**
 * Checks `value` against `schema`. Synchronous: a schema that validates asynchronously (an
 * async refinement) is refused with {@link WorkflowDefinitionError}, since inputs and payloads are checked
 * in the middle of journal writes.
 *
 * @example
 * ```ts
 * const checked = validate(z.object({ id: z.string() }), { id: "o-1" });
 * if (!checked.success) console.log(checked.error.issues);
 * ```
 */
export function validate<S extends StandardSchemaV1>(schema: S, value: unknown): Validation<StandardSchemaV1.InferOutput<S>> {
  const result = schema["~standard"].validate(value);
  if (result instanceof Promise) {
    result.catch(() => {}); // refused below; its outcome is not wanted
    throw new WorkflowDefinitionError(`a ${schema["~standard"].vendor} schema validated asynchronously; Waymark needs synchronous schemas (no async refinements)`);
  }
  return result.issues === undefined ? { success: true, data: result.value as StandardSchemaV1.InferOutput<S> } : { success: false, error: { issues: result.issues } };
}

/**
 * Like {@link validate}, returning the value or throwing {@link InvalidInputError} with the issues.
 *
 * @example
 * ```ts
 * const payload = parse(Approval, signal.payload);
 * ```
 */
export function parse<S extends StandardSchemaV1>(schema: S, value: unknown): StandardSchemaV1.InferOutput<S> {
  const checked = validate(schema, value);
  if (!checked.success) throw new InvalidInputError("the value does not fit its schema", zodIssues(checked.error));
  return checked.data;
}
