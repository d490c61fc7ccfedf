/**
 * How `durable()` loads the Lambda handler's code (lambda.ts) where Node runs Waymark unbundled:
 * on the first invocation, so importing `waymark` locally (waymark dev, tests) loads no AWS
 * code. A Lambda bundle resolves `#lambda-load` to lambda-load-eager.ts instead (the construct's
 * `waymark-lambda` condition, see infra/bundling.ts).
 */
export const loadLambda = (): Promise<typeof import("./lambda.ts")> => import("./lambda.ts");
