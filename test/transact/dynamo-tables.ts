/** User tables on DynamoDB Local for the step.transact tests: create, read back, seed (plain values). */
import { CreateTableCommand, DescribeTableCommand, GetItemCommand, PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "../../lib/aws/dynamodb-transact.ts";
import { uniqueName } from "../setup/clients.ts";
import type { TxItem, TxKey } from "waymark";

/** A user table with `keys` as its key attributes (strings), waited on until ACTIVE. */
export async function createUserTable(client: DynamoDBClient, prefix: string, keys: readonly string[]): Promise<string> {
  const name = uniqueName(prefix);
  await client.send(new CreateTableCommand({
    TableName: name,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: keys.map((k) => ({ AttributeName: k, AttributeType: "S" })),
    KeySchema: keys.map((k, i) => ({ AttributeName: k, KeyType: i === 0 ? "HASH" : "RANGE" })),
  }));
  const deadline = Date.now() + 20_000;
  while ((await client.send(new DescribeTableCommand({ TableName: name }))).Table?.TableStatus !== "ACTIVE") {
    if (Date.now() > deadline) throw new Error(`table ${name} not ACTIVE after 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return name;
}

export async function getItem(client: DynamoDBClient, table: string, key: TxKey): Promise<TxItem | undefined> {
  const out = await client.send(new GetItemCommand({ TableName: table, Key: Object.fromEntries(Object.entries(key).map(([k, v]) => [k, marshall(v)])), ConsistentRead: true }));
  return out.Item && unmarshall(out.Item);
}

export async function putItem(client: DynamoDBClient, table: string, item: TxItem): Promise<void> {
  await client.send(new PutItemCommand({ TableName: table, Item: Object.fromEntries(Object.entries(item).map(([k, v]) => [k, marshall(v)])) }));
}

