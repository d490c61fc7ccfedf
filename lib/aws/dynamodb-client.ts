/**
 * Retries for the journal's DynamoDB calls.
 *
 * Throttling (`ProvisionedThroughputExceeded`, `ThrottlingException`, `RequestLimitExceeded`),
 * 5xx and network errors are the SDK's job: its standard retry strategy classifies them and
 * backs off with full jitter (base 50 ms, 1 s for throttling, doubling, capped at 20 s) within a
 * client-wide retry budget. We only raise its attempts from 3 to {@link JOURNAL_MAX_ATTEMPTS}
 * (at most ~31 s of throttling backoff): a hot run partition throttles in short bursts, and
 * riding one out is cheaper than failing the invocation and redelivering its wake.
 *
 * `TransactionConflictException` (a plain write that hit an item inside another client's
 * transaction) is a 400 the SDK does not retry; {@link retryConflicts} does. The store uses no
 * transactions itself. `ConditionalCheckFailedException` is never retried: it is an answer.
 */
import type { DynamoDBClient, DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { isErrorNamed } from "./errors.ts";
import { dynamodbSdk } from "./sdk.ts";

/** Attempts per DynamoDB call for clients made by {@link createJournalDynamoClient}. */
export const JOURNAL_MAX_ATTEMPTS = 6;

const CONFLICT_ATTEMPTS = 5;
const CONFLICT_BASE_DELAY_MS = 25;

/**
 * The journal's client settings, for a client you construct yourself.
 *
 * @example
 * ```ts
 * const client = new DynamoDBClient({ ...JOURNAL_CLIENT_CONFIG, region: "eu-west-1" });
 * ```
 */
export const JOURNAL_CLIENT_CONFIG = { retryMode: "standard", maxAttempts: JOURNAL_MAX_ATTEMPTS } as const satisfies DynamoDBClientConfig;

/**
 * A DynamoDB client with the journal's retry settings; anything in `config` wins. Asynchronous
 * because it loads the DynamoDB client package on first use (see `sdk.ts`).
 *
 * @example
 * ```ts
 * const store = new DynamoJournalStore({ client: await createJournalDynamoClient(), tableName: process.env.WAYMARK_TABLE! });
 * ```
 */
export async function createJournalDynamoClient(config: DynamoDBClientConfig = {}): Promise<DynamoDBClient> {
  const { DynamoDBClient } = await dynamodbSdk();
  return new DynamoDBClient({ ...JOURNAL_CLIENT_CONFIG, ...config });
}

/** Runs `call`, retrying `TransactionConflictException` with jittered exponential backoff. */
export async function retryConflicts<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!isErrorNamed(err, "TransactionConflictException") || attempt >= CONFLICT_ATTEMPTS) throw err;
      const delay = Math.random() * CONFLICT_BASE_DELAY_MS * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
