/**
 * `#lambda-load` in a Lambda bundle (the construct's `waymark-lambda` export condition): the
 * handler's code imported statically. A bundler wraps every module behind a dynamic `import()`
 * in a lazy initialiser and keeps all its exports; the order flow's bundle is ~3 KiB smaller
 * this way, and a Lambda loads that code on its first invocation anyway.
 */
import * as lambda from "./lambda.ts";

export const loadLambda = async (): Promise<typeof lambda> => lambda;
