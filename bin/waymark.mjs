#!/usr/bin/env node
// The `waymark` command. `#cli` is the built CLI (dist/); the repository's `npm run waymark`
// adds the `waymark-source` condition, which maps it to the TypeScript sources instead. In a
// checkout that was never built (`npx waymark …` in the repository), the command runs itself
// again on the sources: with that condition and tsx (a dev dependency), so that the workflow
// modules it loads resolve `waymark` to the sources too.
let cli;
try {
  cli = await import("#cli");
} catch (err) {
  const unbuilt = err?.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("dist/lib/cli/main.js");
  if (!unbuilt) throw err;
  const { spawnSync } = await import("node:child_process");
  const { fileURLToPath } = await import("node:url");
  const args = ["--conditions=waymark-source", "--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  const child = spawnSync(process.execPath, args, { stdio: "inherit" });
  process.exit(child.status ?? 1);
}
process.exit(await cli.main(process.argv.slice(2)));
