/** The endpoints of the local AWS peers the vitest global setup started (`test/setup/global.ts`). */
import { inject } from "vitest";
import "../setup/clients.ts"; // declares the provided context's keys
import type { Endpoints } from "./harness.ts";

export function peers(): Endpoints {
  return { dynamodb: inject("dynamodbEndpoint"), sqs: inject("sqsEndpoint") };
}
