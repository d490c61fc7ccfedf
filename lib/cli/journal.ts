/**
 * How the CLI reaches a journal: a SQLite file (`--file`, default `$WAYMARK_FILE` or
 * `.waymark/journal.db`) or a deployed DynamoDB table (`--table`, with region, credentials and
 * endpoint from the usual AWS settings: `AWS_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL_DYNAMODB`).
 * Workflow code (`--workflows <module>`) is loaded only for what needs its schemas: starting
 * runs and sending signals, which are checked before anything is written.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Client } from "../client.ts";
import type { AnyWorkflow } from "../core/definition.ts";
import { createRegistry } from "../core/registry.ts";
import { type JournalStore, type Wake, type WakeQueue, systemClock } from "../ports.ts";
import { importUserModule, TypeScriptLoaderError } from "./load-module.ts";

/** A mistake in how the command was called: exit code 2, with the usage. */
export class CliUsageError extends Error {
  override readonly name = "CliUsageError" as const;
}

/** The journal cannot be reached (no file, no table, no credentials): exit code 3. */
export class JournalUnreachableError extends Error {
  override readonly name = "JournalUnreachableError" as const;
}

export interface JournalTarget {
  file?: string | undefined;
  table?: string | undefined;
  /** The wake queue of a deployed stack (`--queue`, else `$WAYMARK_QUEUE_URL`). */
  queue?: string | undefined;
}

export interface OpenJournal {
  client: Client;
  store: JournalStore;
  /** `file .waymark/journal.db` or `table waymark-journal`. */
  where: string;
  /** Said once to the user when wakes cannot be sent (a table without a queue). */
  note?: string;
  close(): Promise<void>;
}

/**
 * Opens the journal a command names.
 *
 * @example
 * ```ts
 * const j = await openJournal({ table: "orders-journal" }, []);
 * console.log((await j.client.list({ limit: 10 })).runs.length);
 * await j.close();
 * ```
 */
export async function openJournal(target: JournalTarget, workflows: readonly AnyWorkflow[]): Promise<OpenJournal> {
  if (target.file !== undefined && target.table !== undefined) throw new CliUsageError("give --file or --table, not both");
  const registry = createRegistry(workflows);
  if (target.table !== undefined) {
    const { createJournalDynamoClient } = await import("../aws/dynamodb-client.ts");
    const { DynamoJournalStore } = await import("../aws/dynamodb-store.ts");
    const dynamo = await createJournalDynamoClient();
    const store = new DynamoJournalStore({ client: dynamo, tableName: target.table });
    const queueUrl = target.queue ?? process.env.WAYMARK_QUEUE_URL;
    let wakes: WakeQueue;
    let note: string | undefined;
    let sqs: { destroy(): void } | undefined;
    if (queueUrl) {
      const { SqsWakes } = await import("../aws/sqs-wakes.ts");
      const { SQSClient } = await import("@aws-sdk/client-sqs");
      const client = new SQSClient({});
      sqs = client;
      const sender = new SqsWakes({ client, queueUrl });
      wakes = { schedule: (w: Wake) => sender.send(w, Math.max(0, (w.at - Date.now()) / 1000)), cancel: async () => {} };
    } else {
      // The run is marked due in the table; the deployed watchdog finds it on its next sweep.
      wakes = { schedule: async (w: Wake) => void (await store.markDue(w.runId, w.at)), cancel: async () => {} };
      note = "no --queue (or $WAYMARK_QUEUE_URL): the run is marked due and the deployed watchdog wakes it on its next sweep; pass the stack's wake queue URL to wake it at once";
    }
    return {
      client: new Client({ store, wakes, clock: systemClock, workflows: registry }),
      store,
      where: `table ${target.table}`,
      ...(note ? { note } : {}),
      close: async () => {
        dynamo.destroy();
        sqs?.destroy();
      },
    };
  }
  const path = target.file ?? process.env.WAYMARK_FILE ?? ".waymark/journal.db";
  if (!existsSync(path)) throw new JournalUnreachableError(`no journal at ${path} (run something first, or pass --file <journal.db> or --table <name>)`);
  const { openLocalDatabase } = await import("../local/database.ts");
  const { SqliteJournalStore } = await import("../local/sqlite-store.ts");
  const { SqliteWakeTable } = await import("../local/wake-table.ts");
  const db = openLocalDatabase(path);
  const store = new SqliteJournalStore(db);
  return { client: new Client({ store, wakes: new SqliteWakeTable(db), clock: systemClock, workflows: registry }), store, where: `file ${path}`, close: async () => void db.close() };
}

/**
 * The workflows a module exports (anything made by `durable()`). A `.ts` module is loaded
 * through tsx when the project has it (see load-module.ts).
 *
 * @example
 * ```ts
 * const workflows = await loadWorkflows(["functions/order-flow.ts"]);
 * ```
 */
export async function loadWorkflows(modules: readonly string[]): Promise<AnyWorkflow[]> {
  const out: AnyWorkflow[] = [];
  for (const m of modules) {
    const path = resolve(m);
    if (!existsSync(path)) throw new CliUsageError(`no file ${m}`);
    const exported = (await importModule(path)) as Record<string, unknown>;
    const found = Object.values(exported).filter((v): v is AnyWorkflow => (typeof v === "object" || typeof v === "function") && v !== null && (v as { kind?: unknown }).kind === "waymark.workflow");
    if (found.length === 0) throw new CliUsageError(`${m} exports no workflow made by durable()`);
    for (const w of found) if (!out.includes(w)) out.push(w);
  }
  return out;
}

async function importModule(path: string): Promise<unknown> {
  try {
    return await importUserModule(path);
  } catch (err) {
    if (err instanceof TypeScriptLoaderError) throw new CliUsageError(err.message, { cause: err });
    throw err;
  }
}

/**
 * A message for an AWS or file failure that the user can act on, or `undefined` for others.
 */
export function explainAccessError(err: unknown, target: JournalTarget): string | undefined {
  const name = (err as { name?: string }).name ?? "";
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? "(from your AWS profile)";
  if (name === "ResourceNotFoundException") return `no DynamoDB table "${target.table}" in region ${region}: check --table, AWS_REGION and AWS_PROFILE`;
  if (name === "CredentialsProviderError" || name === "ExpiredTokenException" || name === "UnrecognizedClientException" || name === "InvalidSignatureException") return `no usable AWS credentials (${(err as Error).message}): set AWS_PROFILE, or log in (aws sso login)`;
  if (name === "AccessDeniedException") return `AWS refused access to the journal: ${(err as Error).message}`;
  if (/Region is missing/i.test((err as Error).message ?? "")) return "no AWS region: set AWS_REGION or a profile with a region";
  if (name === "TimeoutError" || (err as { code?: string }).code === "ECONNREFUSED") return `cannot reach DynamoDB: ${(err as Error).message}`;
  return undefined;
}
