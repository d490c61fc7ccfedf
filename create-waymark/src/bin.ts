#!/usr/bin/env node
// The `create-waymark` command (`npm create waymark`): see index.ts.
import { main } from "./index.ts";

process.exitCode = await main(process.argv.slice(2));
