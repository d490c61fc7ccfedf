/**
 * step.transact on DynamoDB Local (started by the global setup): the journal table and two user
 * tables in the same emulator, one TransactWriteItems per step.
 */
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { transactSuite } from "./suite.ts";
import { createUserTable, getItem, putItem } from "./dynamo-tables.ts";

transactSuite("DynamoDB Local", async () => {
  const client = localDynamoClient();
  const [journal, stock, ledger] = await Promise.all([createJournalTable(client, "tx-journal"), createUserTable(client, "stock", ["sku"]), createUserTable(client, "ledger", ["pk", "sk"])]);
  return {
    store: new DynamoJournalStore({ client, tableName: journal }),
    names: { stock, ledger },
    get: (table, key) => getItem(client, table, key),
    put: (table, item) => putItem(client, table, item),
    close: async () => {
      await Promise.all([deleteTable(client, journal), client.send(new DeleteTableCommand({ TableName: stock })), client.send(new DeleteTableCommand({ TableName: ledger }))]);
      client.destroy();
    },
  };
}, { emulated: false });
