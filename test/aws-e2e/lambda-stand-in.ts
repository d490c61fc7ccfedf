/**
 * A Lambda Invoke stand-in for the end-to-end tests of children in another function. THIS IS
 * NOT A REAL PEER: Lambda has no local emulator here (see docs/testing.md, "Local peers"). Everything around it
 * is real: each function is the exported handler over its own DynamoDB Local table and SQS
 * emulator queue, and children's ends travel through the emulator.
 *
 * It takes the `InvokeCommand` the runtime's `LambdaChildren` sends through `LambdaClient.send`
 * and checks it against the contract Waymark relies on, throwing the SDK's own exceptions:
 *
 *   - `FunctionName` names a registered function, by name or ARN, with or without an alias
 *     qualifier (else `ResourceNotFoundException`); the handler's context carries the ARN it was
 *     invoked through (`invokedFunctionArn`, qualifier included), as Lambda's does;
 *   - the caller holds `lambda:InvokeFunction` on exactly that (qualified) function, as `child.grantInvoke(parent)` gives
 *     (else an `AccessDeniedException`, a `LambdaServiceException` of that name and status 403);
 *   - `InvocationType` is `RequestResponse` (the answer is needed), else `InvalidParameterValueException`;
 *   - `Payload` is the bytes of one JSON document of at most 6 MB (`InvalidRequestContentException`,
 *     `RequestTooLargeException`).
 *
 * The answer is Lambda's: `StatusCode: 200` and the handler's return value as JSON bytes; a
 * handler that throws gives `FunctionError: "Unhandled"` and `{ errorType, errorMessage }`.
 * `loseAnswers(n)` runs the next `n` invocations and then throws a network error instead of
 * their answers (the work is done; the caller does not know it).
 */
import {
  InvalidParameterValueException,
  InvalidRequestContentException,
  InvokeCommand,
  type LambdaClient,
  LambdaServiceException,
  RequestTooLargeException,
  ResourceNotFoundException,
} from "@aws-sdk/client-lambda";
import { lambdaContext } from "./event-source.ts";
import type { Handler } from "./event-source.ts";

const MAX_PAYLOAD = 6 * 1024 * 1024;
const ARN_PREFIX = "arn:aws:lambda:us-east-1:123456789012:function:";
const $metadata = { httpStatusCode: 400 };

export class LambdaStandIn {
  private readonly handlers = new Map<string, Handler>();
  private readonly grants = new Set<string>();
  private readonly aliases = new Set<string>();
  private toLose = 0;
  /** Every invocation, in order: who called which function with what. */
  readonly calls: Array<{ caller: string; functionName: string; event: Record<string, unknown>; lost: boolean; at: number }> = [];

  /** The ARN a registered function answers to (besides its name). */
  static arnOf(name: string): string {
    return ARN_PREFIX + name;
  }

  register(name: string, handler: Handler, aliases: readonly string[] = []): void {
    this.handlers.set(name, handler);
    for (const alias of aliases) this.aliases.add(`${name}:${alias}`);
  }

  /** `caller` may invoke `fn` (`name`, or `name:alias`: what `child.grantInvoke(parent)` puts in the parent's role). */
  grant(caller: string, fn: string): void {
    this.grants.add(`${caller}→${fn}`);
  }

  /** The next `n` invocations run, and their answers are lost on the way back. */
  loseAnswers(n: number): void {
    this.toLose += n;
  }

  /** A `LambdaClient` for the runtime of function `caller`. */
  asClient(caller: string): LambdaClient {
    return { send: (command: unknown) => this.invoke(caller, command) } as unknown as LambdaClient;
  }

  private async invoke(caller: string, command: unknown): Promise<unknown> {
    if (!(command instanceof InvokeCommand)) throw new InvalidParameterValueException({ message: "the stand-in serves Invoke only", $metadata });
    const { FunctionName, InvocationType, Payload } = command.input;
    // A name or an ARN, either with a qualifier (an alias) or without.
    const qualified = FunctionName?.startsWith(ARN_PREFIX) ? FunctionName.slice(ARN_PREFIX.length) : FunctionName;
    const [name, qualifier] = (qualified ?? "").split(":");
    const handler = name === undefined ? undefined : this.handlers.get(name);
    if (name === undefined || !handler || (qualifier !== undefined && !this.aliases.has(`${name}:${qualifier}`))) {
      throw new ResourceNotFoundException({ message: `Function not found: ${FunctionName}`, Type: "User", $metadata: { httpStatusCode: 404 } });
    }
    if (!this.grants.has(`${caller}→${qualified}`)) {
      throw new LambdaServiceException({ name: "AccessDeniedException", $fault: "client", message: `${caller} is not authorized to perform: lambda:InvokeFunction on ${FunctionName}`, $metadata: { httpStatusCode: 403 } });
    }
    if (InvocationType !== "RequestResponse") throw new InvalidParameterValueException({ message: `InvocationType ${InvocationType}: Waymark needs the answer`, $metadata });
    if (!(Payload instanceof Uint8Array)) throw new InvalidRequestContentException({ message: "Payload must be bytes", $metadata });
    if (Payload.byteLength > MAX_PAYLOAD) throw new RequestTooLargeException({ message: `${Payload.byteLength} bytes`, $metadata: { httpStatusCode: 413 } });
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(new TextDecoder().decode(Payload)) as Record<string, unknown>;
    } catch {
      throw new InvalidRequestContentException({ message: "Could not parse request body into json", $metadata });
    }
    const lost = this.toLose > 0;
    if (lost) this.toLose--;
    this.calls.push({ caller, functionName: name, event, lost, at: Date.now() });
    let out: { StatusCode: number; FunctionError?: string; Payload: Uint8Array };
    try {
      // Lambda tells the handler which ARN it was invoked through, qualifier included.
      const result = await handler(event, { ...lambdaContext(), invokedFunctionArn: ARN_PREFIX + qualified });
      out = { StatusCode: 200, Payload: new TextEncoder().encode(JSON.stringify(result ?? null)) };
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      out = { StatusCode: 200, FunctionError: "Unhandled", Payload: new TextEncoder().encode(JSON.stringify({ errorType: e.name, errorMessage: e.message })) };
    }
    if (lost) throw Object.assign(new Error("socket hang up"), { name: "TimeoutError", code: "ECONNRESET" });
    return { ...out, ExecutedVersion: "$LATEST", $metadata: { httpStatusCode: 200 } };
  }
}
