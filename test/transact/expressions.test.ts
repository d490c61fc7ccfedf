/**
 * The emulator's expression subset (lib/core/transact/expr-*.ts), checked case by case against
 * DynamoDB Local, the real engine: every condition and update below is evaluated by both, and
 * they must agree (including where DynamoDB refuses the data). What the emulator refuses is
 * refused with UnsupportedExpressionError, and every reserved word it knows DynamoDB refuses too.
 */
import { DeleteTableCommand, PutItemCommand, TransactWriteItemsCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { marshall, unmarshall } from "../../lib/aws/dynamodb-transact.ts";
import { applyUpdate, evaluate, ExpressionDataError } from "../../lib/core/transact/expr-eval.ts";
import { parseCondition, parseUpdate, RESERVED_WORDS } from "../../lib/core/transact/expr-parse.ts";
import { UnsupportedExpressionError, type TxValue } from "waymark";
import { localDynamoClient } from "../setup/clients.ts";
import { createUserTable } from "./dynamo-tables.ts";

const client = localDynamoClient();
let table = "";
beforeAll(async () => {
  table = await createUserTable(client, "expr", ["id"]);
});
afterAll(async () => {
  await client.send(new DeleteTableCommand({ TableName: table }));
  client.destroy();
});

const ITEM = { id: "k", n: 5, s: "hello", b: true, z: null, m: { x: 1, y: "a" }, l: [1, 2] } as const;
const POOL: Record<string, TxValue> = { ":zero": 0, ":one": 1, ":four": 4, ":five": 5, ":six": 6, ":str": "hello", ":str2": "hellp", ":he": "he", ":x": "x", ":t": true, ":f": false, ":null": null, ":m": { x: 1, y: "a" }, ":l": [1, 2] };
const NAMES: Record<string, string> = { "#nm": "n", "#s": "status" };
const used = (expr: string) => {
  const values = Object.fromEntries(Object.entries(POOL).filter(([k]) => new RegExp(`${k}(?![A-Za-z0-9_])`).test(expr)));
  const names = Object.fromEntries(Object.entries(NAMES).filter(([k]) => new RegExp(`${k}(?![A-Za-z0-9_])`).test(expr)));
  return { values, names };
};
const av = (values: Record<string, TxValue>) => Object.fromEntries(Object.entries(values).map(([k, v]) => [k, marshall(v)]));

let ids = 0;
async function seed(): Promise<string> {
  const id = `k${++ids}`;
  await client.send(new PutItemCommand({ TableName: table, Item: av({ ...ITEM, id }) }));
  return id;
}

async function dynamoCondition(expr: string): Promise<boolean | "refused"> {
  const id = await seed();
  const { values, names } = used(expr);
  try {
    await client.send(new TransactWriteItemsCommand({ TransactItems: [{ ConditionCheck: { TableName: table, Key: { id: { S: id } }, ConditionExpression: expr, ...(Object.keys(values).length ? { ExpressionAttributeValues: av(values) } : {}), ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}) } }] }));
    return true;
  } catch (err) {
    const e = err as { name: string; CancellationReasons?: Array<{ Code?: string }> };
    if (e.name === "TransactionCanceledException" && e.CancellationReasons?.[0]?.Code === "ConditionalCheckFailed") return false;
    return "refused";
  }
}

async function dynamoUpdate(expr: string): Promise<Record<string, TxValue> | "refused"> {
  const id = await seed();
  const { values, names } = used(expr);
  try {
    const out = await client.send(new UpdateItemCommand({ TableName: table, Key: { id: { S: id } }, UpdateExpression: expr, ReturnValues: "ALL_NEW", ...(Object.keys(values).length ? { ExpressionAttributeValues: av(values) } : {}), ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}) }));
    return { ...unmarshall(out.Attributes ?? {}), id: "k" };
  } catch {
    return "refused";
  }
}

const CONDITIONS = [
  "attribute_exists(n)", "attribute_not_exists(n)", "attribute_exists(nothere)", "attribute_exists(m.x)", "attribute_not_exists(m.q)",
  "n = :five", "n <> :five", "n < :six", "n <= :five", "n > :four", "n >= :six",
  "nothere = :five", "nothere <> :five", "nothere < :five",
  "s = :five", "s <> :five", "s < :str2", "s > :str2", "s >= :str",
  "begins_with(s, :he)", "begins_with(s, :x)", "begins_with(n, :he)",
  "b = :t", "b <> :f", "z = :null", "m = :m", "l = :l", "m.x = :one", "m.y = :x",
  "n = :five AND s = :str", "n = :six OR s = :str", "NOT n = :five", "NOT (n = :five OR s = :x) AND b = :t",
  "n = :five OR s = :x AND b = :f", "(n = :five OR s = :x) AND b = :f", "#nm = :five", "#s = :x", "n = n", "n < s",
];

const UPDATES = [
  "SET n = n + :one", "SET n = n - :one", "SET q = if_not_exists(q, :zero) + :one", "SET n = if_not_exists(n, :zero) + :one",
  "REMOVE s, b", "ADD n :one", "ADD fresh :one", "SET m.x = :five", "SET m.added = :five", "SET #s = :x",
  "SET s = :five, n = :str REMOVE z ADD c :one", "SET a = n, n = :one", "SET #nm = :six",
  "SET missing2 = nothere + :one", "SET n = s + :one", "SET nope.x = :one", "SET n = :one, n = :five", "SET id = :str", "ADD s :one", "SET m = :one, m.x = :five",
];

function emulatedCondition(expr: string): boolean | "refused" {
  const { values, names } = used(expr);
  try {
    return evaluate(parseCondition(expr, names), ITEM, values);
  } catch (err) {
    if (err instanceof ExpressionDataError) return "refused";
    throw err;
  }
}

function emulatedUpdate(expr: string): Record<string, TxValue> | "refused" {
  const { values, names } = used(expr);
  try {
    return applyUpdate(parseUpdate(expr, names), ITEM, { id: "k" }, values);
  } catch (err) {
    if (err instanceof UnsupportedExpressionError) throw err;
    return "refused";
  }
}

describe("the emulator agrees with DynamoDB Local", () => {
  it("on every condition of the subset", async () => {
    const disagree: string[] = [];
    for (const expr of CONDITIONS) {
      const real = await dynamoCondition(expr);
      const emulated = emulatedCondition(expr);
      if (real !== emulated) disagree.push(`${expr}: DynamoDB ${real}, emulator ${emulated}`);
    }
    expect(disagree).toEqual([]);
  });

  it("on every update of the subset, including the ones DynamoDB refuses", async () => {
    const disagree: string[] = [];
    for (const expr of UPDATES) {
      const real = await dynamoUpdate(expr);
      const emulated = emulatedUpdate(expr);
      if (JSON.stringify(sortKeys(real)) !== JSON.stringify(sortKeys(emulated))) disagree.push(`${expr}: DynamoDB ${JSON.stringify(real)}, emulator ${JSON.stringify(emulated)}`);
    }
    expect(disagree).toEqual([]);
  });

  it("every reserved word the emulator refuses, DynamoDB refuses too", async () => {
    const accepted: string[] = [];
    for (const word of RESERVED_WORDS) {
      const lower = word.toLowerCase();
      if (await dynamoCondition(`attribute_exists(${lower})`) !== "refused") accepted.push(lower);
      expect(() => parseCondition(`attribute_exists(${lower})`), lower).toThrow(UnsupportedExpressionError);
    }
    expect(accepted).toEqual([]);
  });
});

describe("outside the subset", () => {
  it.each([
    ["size(s) > :one", /size\(\) is not supported/],
    ["contains(s, :he)", /contains\(\) is not supported/],
    ["attribute_type(s, :x)", /attribute_type\(\) is not supported/],
    ["n IN (:one, :five)", /IN is not supported/],
    ["n BETWEEN :one AND :six", /BETWEEN is not supported/],
    ["l[0] = :one", /list indexes/],
    ["n = ", /ends too early/],
    ["n = :five extra", /unexpected "extra"/],
  ])("refuses the condition %s", (expr, problem) => {
    expect(() => parseCondition(expr)).toThrow(UnsupportedExpressionError);
    expect(() => parseCondition(expr)).toThrow(problem);
  });

  it.each([
    ["DELETE tags :t", /DELETE clause/],
    ["SET l = list_append(l, :l)", /list_append\(\) is not supported/],
    ["SET a = :one SET b = :one", /appears twice/],
    ["UPDATE n", /expected SET, REMOVE or ADD/],
  ])("refuses the update %s", (expr, problem) => {
    expect(() => parseUpdate(expr)).toThrow(problem);
  });
});

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  return v;
}
