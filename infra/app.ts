/**
 * The example app: the order workflow (functions/order-flow.ts) as a deployed durable function.
 * `npx cdk synth` works offline with no credentials (the account and region are placeholders
 * unless the CDK CLI supplies real ones); `npx cdk deploy` deploys it.
 *
 *   npx cdk deploy                                   # first deploy: outputs the webhook URL
 *   npx cdk deploy -c publicUrl=https://….on.aws     # optional: approval links become full URLs
 */
import { App, Stack, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { fileURLToPath } from "node:url";
import { DurableFunction } from "waymark/cdk";

const app = new App();
const stack = new Stack(app, "WaymarkOrders", {
  description: "Waymark example: the order workflow as a durable Lambda function",
  env: {
    account: process.env.CDK_DEFAULT_ACCOUNT ?? "123456789012",
    region: process.env.CDK_DEFAULT_REGION ?? "eu-west-1",
  },
});
const publicUrl: unknown = app.node.tryGetContext("publicUrl");

new DurableFunction(stack, "Orders", {
  entry: fileURLToPath(new URL("../functions/order-flow.ts", import.meta.url)),
  handler: "orderFlow",
  ...(typeof publicUrl === "string" && publicUrl !== "" ? { publicUrl } : {}),
  // The example's fake shop and payment provider keep their ledgers in files; on Lambda only
  // /tmp is writable (and it lasts as long as one container: fine for a demo, not for money).
  environment: { WAYMARK_DEMO_DIR: "/tmp/waymark-demo" },
});

// The AWS Solutions checks run on every synth: a finding fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
