/**
 * A journal table on DynamoDB Local and a client whose every command is noted by name
 * (`initialize` middleware: each command once, whatever its retries), for tests that count what
 * an operation costs in requests.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { inject } from "vitest";
import { createJournalDynamoClient } from "../../lib/aws/dynamodb-client.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";

export interface CountedTable {
  client: DynamoDBClient;
  tableName: string;
  /** Commands sent since the last reset, by name without `Command` (`"Query"`, `"PutItem"`). */
  commands: string[];
  close(): Promise<void>;
}

/** A fresh journal table (named after `label`) and a counting client on it. */
export async function countedTable(label: string): Promise<CountedTable> {
  const admin = localDynamoClient();
  const tableName = await createJournalTable(admin, label);
  const client = await createJournalDynamoClient({ endpoint: inject("dynamodbEndpoint"), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const commands: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      commands.push(String(context.commandName ?? "?").replace(/Command$/, ""));
      return next(args);
    },
    { step: "initialize", name: "countCommands" },
  );
  return {
    client,
    tableName,
    commands,
    close: async () => {
      await deleteTable(admin, tableName);
      admin.destroy();
      client.destroy();
    },
  };
}
