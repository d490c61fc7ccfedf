/**
 * `npm create waymark` as a user meets it, from the packed tarballs only: `npm pack` of waymark
 * and of create-waymark, then in a temporary folder outside the repository (nothing resolves to
 * its sources or node_modules, and the repository's bins are off PATH):
 *
 *   1. the scaffold run from its tarball (`npm exec`, as `npm create` does), `--yes`, with
 *      `--waymark` pointing the project's dependency at the waymark tarball;
 *   2. `npm install`, then `npm test` (the workflow's tests on waymark/testing) and
 *      `npm run typecheck`;
 *   3. `npm run synth`: the CDK app synthesized, bundled by the construct's esbuild, cdk-nag on;
 *   4. `npm run dev`: the dashboard fetched over HTTP, a run started with the CLI from another
 *      command (`waymark runs start --workflows src/expense.ts`, as the project's README says)
 *      executed by the dev server up to its wait for a decision, the decision sent with
 *      `waymark runs signal`, the run resumed into its payout delay, then Ctrl-C.
 *
 * better-sqlite3 takes its build from the CI cache (ci-cache.ts) instead of compiling SQLite.
 * Run: npm run test:create (in .ci/run). Keep the folder with WAYMARK_KEEP_CONSUMER=1.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sqlitePrebuildEnv } from "./ci-cache.ts";
import { dashboardUrl, expectThat, httpGet, repo, serve, sh, step, summary, until } from "./harness.ts";

const work = mkdtempSync(join(tmpdir(), "waymark-create-"));
const name = "expense-approvals";
const project = join(work, name);

function pack(dir: string): string {
  const out = JSON.parse(sh(dir, "npm", ["pack", "--json", "--pack-destination", work])) as Array<{ filename: string }>;
  const file = out[0]?.filename;
  if (!file) throw new Error(`npm pack in ${dir} printed no file`);
  return join(work, file);
}

try {
  console.log(`npm create waymark in ${work} (node ${process.version})`);
  let waymark = "";
  let create = "";
  await step("npm pack waymark and create-waymark", () => {
    waymark = pack(repo);
    create = pack(join(repo, "create-waymark"));
    const listed = sh(work, "tar", ["tzf", create]).split("\n");
    for (const need of ["package/dist/bin.js", "package/template/package.json", "package/template/gitignore", "package/template/src/expense.ts", "package/LICENSE"]) {
      expectThat(listed.includes(need), `the create-waymark tarball lacks ${need.slice("package/".length)}`);
    }
    expectThat(!listed.some((f) => f.startsWith("package/src/")), "the create-waymark tarball ships its TypeScript sources, not its build");
    return `${waymark.slice(work.length + 1)}, ${create.slice(work.length + 1)} (${listed.filter(Boolean).length} files)`;
  });

  await step(`npm exec create-waymark (from its tarball) ${name} --yes --waymark <the waymark tarball>`, () => {
    const out = sh(work, "npm", ["exec", "--yes", `--package=${create}`, "--", "create-waymark", name, "--yes", "--waymark", waymark]);
    expectThat(out.includes(`cd ${name}`) && out.includes("npm run dev"), `it printed: ${out}`);
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { name: string; dependencies: Record<string, string> };
    expectThat(manifest.name === name && manifest.dependencies.waymark === `file:${waymark}`, `package.json: ${JSON.stringify(manifest)}`);
    return readdirSync(project, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name).slice(project.length + 1)).sort().join(" ");
  });

  await step("npm install (better-sqlite3 from the CI cache)", () => {
    sh(project, "npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], sqlitePrebuildEnv());
    expectThat(existsSync(join(project, "node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node")), "better-sqlite3 has no build");
  });

  await step("npm test", () => {
    const out = sh(project, "npm", ["test"]);
    expectThat(/Tests\s+5 passed \(5\)/.test(out.replace(/\x1b\[[0-9;]*m/g, "")), `vitest printed: ${out}`);
    return out.replace(/\x1b\[[0-9;]*m/g, "").split("\n").filter((l) => /Test Files|Tests /.test(l)).join("\n");
  });

  await step("npm run typecheck", () => void sh(project, "npm", ["run", "typecheck"]));

  await step("npm run synth (the construct's esbuild bundle, cdk-nag)", () => {
    sh(project, "npm", ["run", "synth"], { CDK_DISABLE_VERSION_CHECK: "true" });
    const templateFile = join(project, "cdk.out", "ExpenseApprovals.template.json");
    const template = JSON.parse(readFileSync(templateFile, "utf8")) as { Resources: Record<string, { Type: string; Properties?: { Runtime?: string } }> };
    const fn = Object.values(template.Resources).find((r) => r.Type === "AWS::Lambda::Function" && r.Properties?.Runtime?.startsWith("nodejs"));
    expectThat(fn !== undefined, "no Node.js function in the template");
    return `cdk.out/ExpenseApprovals.template.json: ${Object.keys(template.Resources).length} resources, the function on ${fn?.Properties?.Runtime}`;
  });

  await step("npm run dev: the dashboard over HTTP; a run started from the CLI waits for its decision, gets it from the CLI, sleeps; Ctrl-C", async () => {
    const dev = serve(project, "npm", ["run", "dev", "--", "--port", "0"]);
    let listed: string;
    try {
      const url = await dashboardUrl(dev);
      const list = await httpGet(`${url}/`);
      expectThat(list.status === 200 && list.body.includes("<h1>Runs</h1>"), `GET / answered ${list.status}`);
      const form = await httpGet(`${url}/ui/start`);
      expectThat(form.status === 200 && form.body.includes("expense-approval"), `GET /ui/start answered ${form.status} without the workflow`);
      const input = { id: "exp-1", employee: "kim@example.com", amount: 240, description: "train to Lyon" };
      sh(project, "npx", ["waymark", "runs", "start", "expense-approval", "--run-id", "exp-1", "--workflows", "src/expense.ts", "--input", JSON.stringify(input)]);
      listed = await until("exp-1 to wait for its decision", () => {
        const out = sh(project, "npx", ["waymark", "runs", "list"]);
        return /exp-1\s+expense-approval\s+suspended .*signal:decision/.test(out) ? out : undefined;
      });
      const page = await httpGet(`${url}/ui/runs/exp-1`);
      expectThat(page.status === 200 && page.body.includes("kim@example.com claims 240"), `the run's page answered ${page.status} without the wait's summary`);
      // The README's next command: the decision from the CLI; the dev server resumes the run into its payout delay.
      sh(project, "npx", ["waymark", "runs", "signal", "exp-1", "decision", "--workflows", "src/expense.ts", "--payload", '{"approved":true,"approver":"ana@example.com"}']);
      listed = await until("exp-1 to sleep before its payout", () => {
        const out = sh(project, "npx", ["waymark", "runs", "list"]);
        return /exp-1\s+expense-approval\s+suspended .*sleep:payout-delay/.test(out) ? out : undefined;
      });
    } catch (err) {
      await dev.stop();
      throw new Error(`${(err as Error).message}\nnpm run dev printed:\n${dev.output()}`, { cause: err });
    }
    // Ctrl-C reaches npm and waymark dev: the server closes its journal and exits, npm ends by the signal.
    const ended = await dev.stop();
    expectThat(ended.code === 0 || ended.signal === "SIGINT", `npm run dev ended with ${JSON.stringify(ended)}:\n${dev.output()}`);
    expectThat(!/error|EADDRINUSE/i.test(dev.output()), `npm run dev printed an error:\n${dev.output()}`);
    return listed;
  });
} finally {
  if (process.env.WAYMARK_KEEP_CONSUMER) console.log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

summary("create");
