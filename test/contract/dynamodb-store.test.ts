/**
 * The shared JournalStore contract against the DynamoDB store on DynamoDB Local (started by the
 * global setup; a real protocol peer, not a mock). One table for the whole file: the contract
 * names its runs uniquely. Store-specific tests live in `test/aws/dynamodb-store.test.ts`.
 */
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { journalStoreContract } from "./store-contract.ts";

journalStoreContract("dynamodb", async () => {
  const client = localDynamoClient();
  const tableName = await createJournalTable(client, "contract");
  return {
    store: new DynamoJournalStore({ client, tableName }),
    close: async () => {
      await deleteTable(client, tableName);
      client.destroy();
    },
  };
});
