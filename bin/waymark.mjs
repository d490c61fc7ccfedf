#!/usr/bin/env node
// The `waymark` command. Loads the TypeScript sources through tsx (a runtime dependency).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../lib/cli/main.ts");
process.exit(await main(process.argv.slice(2)));
