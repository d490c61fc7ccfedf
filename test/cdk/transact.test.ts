/**
 * `fn.grantTransact(table)`: the synthesized policy lets step.transact's TransactWriteItems write
 * the user's table item by item (PutItem, UpdateItem, DeleteItem, ConditionCheckItem), on that
 * table only, and nothing is granted without it.
 */
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { describe, expect, it } from "vitest";
import { synthDurable } from "./stack.ts";

const TRANSACT_ACTIONS = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"];

type Statement = { Sid?: string; Action: string | string[]; Resource: unknown };
const statements = (t: ReturnType<typeof synthDurable>): Statement[] =>
  Object.values(t.template.findResources("AWS::IAM::Policy")).flatMap((p) => (p.Properties as { PolicyDocument: { Statement: Statement[] } }).PolicyDocument.Statement);

describe("grantTransact", () => {
  it("grants the per-item actions on each granted table, in one statement", () => {
    const tables: dynamodb.TableV2[] = [];
    const t = synthDurable({}, {
      beforeSynth: (stack, durable) => {
        for (const name of ["Stock", "Ledger"]) tables.push(new dynamodb.TableV2(stack, name, { partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING } }));
        for (const table of tables) durable.grantTransact(table);
        durable.grantTransact(tables[0] as dynamodb.TableV2); // twice: still one resource
      },
    });
    const granted = statements(t).filter((s) => s.Sid === "TransactUserTables");
    expect(granted).toHaveLength(1);
    expect(granted[0]?.Action).toEqual(TRANSACT_ACTIONS);
    const arns = tables.map((table) => t.ref(table.tableArn));
    expect(granted[0]?.Resource).toEqual(expect.arrayContaining(arns));
    expect(new Set((granted[0]?.Resource as unknown[]).map((r) => JSON.stringify(r))).size).toBe(2);
    // No statement names TransactWriteItems: IAM has no such action.
    expect(JSON.stringify(statements(t))).not.toContain("TransactWriteItems");
  });

  it("grants nothing on a user's table without it, and refuses the journal table", () => {
    const t = synthDurable({}, { beforeSynth: (stack) => void new dynamodb.TableV2(stack, "Stock", { partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING } }) });
    expect(statements(t).filter((s) => s.Sid === "TransactUserTables")).toEqual([]);
    expect(JSON.stringify(statements(t))).not.toContain("ConditionCheckItem");
    expect(() => synthDurable({}, { beforeSynth: (_stack, durable) => durable.grantTransact(durable.table) })).toThrow(/never writes the journal table/);
  });
});
