/** Journal tables in DynamoDB Local, created from the one table definition the CDK uses too. */
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { journalTableInput } from "../../lib/aws/table-definition.ts";
import { uniqueName } from "./clients.ts";

/** Creates a fresh journal table and waits (with a deadline) until it is ACTIVE. */
export async function createJournalTable(client: DynamoDBClient, prefix = "journal"): Promise<string> {
  const name = uniqueName(prefix);
  await client.send(new CreateTableCommand(journalTableInput(name)));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    if (Table?.TableStatus === "ACTIVE") return name;
    if (Date.now() > deadline) throw new Error(`table ${name} still ${Table?.TableStatus} after 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function deleteTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(new DeleteTableCommand({ TableName: name }));
}
