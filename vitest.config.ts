import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["waymark-source"] },
  ssr: { resolve: { conditions: ["waymark-source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    // Starts DynamoDB Local and the SQS emulator once per run (test/setup/global.ts).
    globalSetup: ["test/setup/global.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: "forks",
  },
});
