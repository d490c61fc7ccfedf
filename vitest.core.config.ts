/**
 * The suite's core, which .ci/run also runs on Node 22 and 24 (test/package/node-versions.ts):
 * every test that needs neither DynamoDB Local (Java), the SQS and S3 emulators nor Chromium,
 * so no global setup. Of the tests that SIGKILL real worker processes, the order workflow's and
 * the race of three processes on one SQLite file stay; the rest of test/crash and the agent's
 * kill points (minutes of process spawning) run with everything else on the system Node
 * (`npm test`).
 *
 *   npx vitest run --config vitest.core.config.ts
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["waymark-source"] },
  ssr: { resolve: { conditions: ["waymark-source"] } },
  test: {
    include: [
      "test/{core,contract,local,compose,golden,http,hardening,ai,lifecycle,payloads,examples,cli,create}/**/*.test.ts",
      "test/crash/order-flow.test.ts",
      "test/crash/two-workers.test.ts",
      // step.transact on the emulated tables (the DynamoDB cases need DynamoDB Local).
      "test/transact/{memory,sqlite,conflicts,example}.test.ts",
    ],
    exclude: [
      // DynamoDB Local, the SQS or the S3 emulator (test/setup/global.ts starts them for npm test).
      "test/contract/dynamodb-store.test.ts",
      "test/hardening/value-limits.test.ts",
      "test/lifecycle/history-check.test.ts",
      "test/lifecycle/runtime-options.test.ts",
      "test/payloads/stores.test.ts",
      "test/cli/runs-verbs.test.ts",
      // Minutes of worker processes killed at every step of the agent.
      "test/examples/agent-kill-points.test.ts",
    ],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: "forks",
  },
});
