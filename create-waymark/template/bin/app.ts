/**
 * The CDK app: the expense workflow as a durable Lambda function, with its journal table, wake
 * queue, webhook (approval links) and alarms, all from one construct. `npm run synth` works
 * offline with no AWS account; `npm run deploy` deploys it (run `npx cdk bootstrap` once per
 * account and region first). The cdk-nag AWS Solutions checks run on every synth: a finding
 * fails it.
 */
import { fileURLToPath } from "node:url";
import { App, Stack, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { DurableFunction } from "waymark/cdk";

const app = new App();
const stack = new Stack(app, "WaymarkApp", {
  description: "waymark-app: the expense-approval workflow as a durable Lambda function",
});

new DurableFunction(stack, "ExpenseApproval", {
  entry: fileURLToPath(new URL("../src/expense.ts", import.meta.url)), // the file that exports the workflow
  handler: "expenseApproval", // the export: durable() returns the Lambda handler too
});

Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
