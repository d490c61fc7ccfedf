#!/usr/bin/env node
// The `waymark` command. `#cli` is the built CLI (dist/); the repository's `npm run waymark`
// adds the `waymark-source` condition, which maps it to the TypeScript sources instead.
const { main } = await import("#cli");
process.exit(await main(process.argv.slice(2)));
