/**
 * The DynamoDB store's transactRecord on DynamoDB Local, request by request: what its
 * ClientRequestToken and its cancellation reasons mean. DynamoDB Local honours the token's
 * idempotency (LOCAL-AWS.md); a token it has not seen is what AWS does with one past its
 * 10-minute window ("treated as a new request").
 */
import { DeleteItemCommand, DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { pkOf, s } from "../../lib/aws/dynamodb-codec.ts";
import { TransactValidationError, type TxOp } from "waymark";
import { localDynamoClient } from "../setup/clients.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { createUserTable, getItem } from "./dynamo-tables.ts";

const client = localDynamoClient();
let journal = "";
let counters = "";
let store: DynamoJournalStore;
beforeAll(async () => {
  [journal, counters] = await Promise.all([createJournalTable(client, "tx-store"), createUserTable(client, "counters", ["id"])]);
  store = new DynamoJournalStore({ client, tableName: journal });
});
afterAll(async () => {
  await Promise.all([deleteTable(client, journal), client.send(new DeleteTableCommand({ TableName: counters }))]);
  client.destroy();
});

const bump = (id: string): TxOp => ({ op: "update", table: counters, key: { id }, update: "ADD hits :one", values: { ":one": 1 } });
const record = (stepId: string, n = 1) => ({ key: `step#${stepId}`, body: { v: 1, type: "step", kind: "run", stepId, status: "ok", result: n, attempts: 1, startedAt: 0, at: 0 } });
const forget = (runId: string, key: string) => client.send(new DeleteItemCommand({ TableName: journal, Key: { pk: s(pkOf(runId)), sk: s(key) } }));

describe("transactRecord on DynamoDB Local", () => {
  it("a resend with the same request id is answered by its token: applied once, even with the record gone", async () => {
    expect(await store.transactRecord("r-1", record("a"), [bump("c-1")], "r-1/a#1@1")).toEqual({ written: true });
    // Take the record away: only the token can now stop the resend from applying again.
    await forget("r-1", "step#a");
    expect(await store.transactRecord("r-1", record("a"), [bump("c-1")], "r-1/a#1@1")).toEqual({ written: true });
    expect(await getItem(client, counters, { id: "c-1" })).toEqual({ id: "c-1", hits: 1 });
    expect(await store.getRecord("r-1", "step#a")).toBeUndefined();
  });

  it("a new token (a resend past the window) is a new request: the record's condition refuses it and hands back our record", async () => {
    expect(await store.transactRecord("r-2", record("a"), [bump("c-2")], "r-2/a#1@1")).toEqual({ written: true });
    expect(await store.transactRecord("r-2", record("a"), [bump("c-2")], "r-2/a#1@1 later")).toEqual({ written: true });
    expect(await getItem(client, counters, { id: "c-2" })).toEqual({ id: "c-2", hits: 1 });
    // Without the record, a new token applies again: the record is what makes it exactly once.
    await forget("r-2", "step#a");
    await store.transactRecord("r-2", record("a"), [bump("c-2")], "r-2/a#1@1 later still");
    expect(await getItem(client, counters, { id: "c-2" })).toEqual({ id: "c-2", hits: 2 });
  });

  it("another invocation's record: nothing written, its record returned", async () => {
    await store.transactRecord("r-3", record("a", 1), [bump("c-3")], "r-3/a#1@1");
    const res = await store.transactRecord("r-3", record("a", 2), [bump("c-3")], "r-3/a#1@2");
    expect(res).toMatchObject({ written: false, existing: { key: "step#a", body: { result: 1 } } });
    expect(await getItem(client, counters, { id: "c-3" })).toEqual({ id: "c-3", hits: 1 });
  });

  it("the record is looked at before the user's conditions: a resend whose own effects fail its condition is written", async () => {
    const once: TxOp = { op: "put", table: counters, item: { id: "c-4", hits: 1 }, condition: "attribute_not_exists(id)" };
    expect(await store.transactRecord("r-4", record("a"), [once], "r-4/a#1@1")).toEqual({ written: true });
    expect(await store.transactRecord("r-4", record("a"), [once], "r-4/a#1@1 past the window")).toEqual({ written: true });
    // With no record of ours, the same condition failing is the user's: item 0, refused.
    expect(await store.transactRecord("r-5", record("a"), [bump("c-5"), once], "r-5/a#1@1")).toEqual({ written: false, refused: { index: 1, reason: "ConditionalCheckFailed" } });
    expect(await getItem(client, counters, { id: "c-5" })).toBeUndefined();
    expect(await store.getRecord("r-5", "step#a")).toBeUndefined();
  });

  it("refuses a write to the journal's own table, and DynamoDB's own refusals, writing nothing", async () => {
    const own: TxOp = { op: "put", table: journal, item: { pk: "x", sk: "y" } };
    await expect(store.transactRecord("r-6", record("a"), [own], "r-6/a#1@1")).rejects.toThrow(/journal's own table/);
    const reserved: TxOp = { op: "update", table: counters, key: { id: "c-6" }, update: "SET status = :s", values: { ":s": "x" } };
    await expect(store.transactRecord("r-6", record("a"), [reserved], "r-6/a#1@2")).rejects.toBeInstanceOf(TransactValidationError);
    const missing: TxOp = { op: "put", table: "no-such-table", item: { id: "x" } };
    await expect(store.transactRecord("r-6", record("a"), [missing], "r-6/a#1@3")).rejects.toBeInstanceOf(TransactValidationError);
    expect(await store.getRecord("r-6", "step#a")).toBeUndefined();
  });
});
