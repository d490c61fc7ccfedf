/**
 * Issue 20 item 1: `npm create waymark` (create-waymark/). What it writes, what it refuses
 * (writing nothing), and that the template's dependencies are the versions this repository is
 * tested with. The generated project itself (install, test, dev, synth) is proven from the
 * packed tarballs by test/package/create.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../create-waymark/src/index.ts";
import { packageName, ScaffoldError, scaffold, stackName } from "../../create-waymark/src/scaffold.ts";

const repo = new URL("../../", import.meta.url);
const read = (path: string) => JSON.parse(readFileSync(new URL(path, repo), "utf8")) as { version: string; devDependencies: Record<string, string>; dependencies: Record<string, string>; engines: Record<string, string> };
const root = read("package.json");
const template = read("create-waymark/template/package.json");
const work = () => mkdtempSync(join(tmpdir(), "create-waymark-"));

function filesIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(dir.length + 1))
    .sort();
}

async function run(argv: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const before = process.cwd();
  process.chdir(cwd);
  try {
    const code = await main(argv, (l) => void out.push(l), (l) => void err.push(l));
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    process.chdir(before);
  }
}

describe("npm create waymark", () => {
  it("writes the project: the workflow, its tests, the CDK app, the scripts, named after its directory", async () => {
    const cwd = work();
    const res = await run(["expense-approvals", "--yes"], cwd);
    expect(res.err).toBe("");
    expect(res.code).toBe(0);
    expect(res.out).toContain("cd expense-approvals");
    const project = join(cwd, "expense-approvals");
    expect(filesIn(project)).toEqual([".gitignore", "README.md", "bin/app.ts", "cdk.json", "package.json", "src/expense.ts", "src/payments.ts", "test/expense.test.ts", "tsconfig.json"]);
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as typeof template & { name: string; scripts: Record<string, string> };
    expect(manifest.name).toBe("expense-approvals");
    expect(manifest.dependencies.waymark).toBe(`^${root.version}`);
    expect(manifest.scripts).toEqual({ dev: "waymark dev src/expense.ts", test: "vitest run", typecheck: "tsc --noEmit", synth: "cdk synth --quiet", deploy: "cdk deploy" });
    expect(JSON.parse(readFileSync(join(project, "cdk.json"), "utf8"))).toMatchObject({ app: "npx tsx bin/app.ts" });
    const app = readFileSync(join(project, "bin/app.ts"), "utf8");
    expect(app).toContain('new Stack(app, "ExpenseApprovals"');
    expect(app).toContain("new AwsSolutionsChecks(app)");
    expect(app).toContain('handler: "expenseApproval"');
    expect(readFileSync(join(project, "README.md"), "utf8")).toMatch(/^# expense-approvals\n/);
  });

  it("the template depends on the versions this repository tests with, and on waymark's own version", () => {
    for (const [name, range] of Object.entries({ ...template.dependencies, ...template.devDependencies })) {
      if (name === "waymark") continue;
      const tested = root.devDependencies[name];
      expect(tested, `${name} is not a dev dependency of the repository`).toBeDefined();
      expect(range, name).toBe(`^${tested}`);
    }
    expect(read("create-waymark/package.json").version).toBe(root.version);
    expect(template.engines.node).toBe(root.engines.node);
    expect(read("create-waymark/package.json").engines.node).toBe(root.engines.node);
  });

  it("--waymark <tarball> writes file:<absolute path>, so the project installs the packed package", async () => {
    const cwd = work();
    writeFileSync(join(cwd, "waymark-0.1.0.tgz"), "");
    expect((await run(["app", "--yes", "--waymark", "./waymark-0.1.0.tgz"], cwd)).code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(cwd, "app", "package.json"), "utf8")) as typeof template;
    expect(manifest.dependencies.waymark).toBe(`file:${join(cwd, "waymark-0.1.0.tgz")}`);
    expect((await run(["app2", "--waymark", "^0.2.0"], cwd)).code).toBe(0);
    expect((JSON.parse(readFileSync(join(cwd, "app2", "package.json"), "utf8")) as typeof template).dependencies.waymark).toBe("^0.2.0");
  });

  it("without a directory and not on a terminal (or with --yes): waymark-app", async () => {
    const cwd = work();
    expect((await run([], cwd)).code).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, "waymark-app", "package.json"), "utf8"))).toMatchObject({ name: "waymark-app" });
  });

  it("refuses a directory that is not empty (exit 1) and writes nothing into it", async () => {
    const cwd = work();
    mkdirSync(join(cwd, "taken"));
    writeFileSync(join(cwd, "taken", "notes.txt"), "mine");
    const res = await run(["taken", "--yes"], cwd);
    expect(res.code).toBe(1);
    expect(res.err).toContain("is not empty");
    expect(readdirSync(join(cwd, "taken"))).toEqual(["notes.txt"]);
  });

  it("refuses a name npm would refuse, a missing tarball and bad options (exit 2), and writes nothing", async () => {
    const cwd = work();
    for (const argv of [["My App"], ["MyApp"], [".hidden"], ["app", "--waymark", "./missing.tgz"], ["a", "b"], ["app", "--colour"]]) {
      const res = await run(argv, cwd);
      expect(res.code, argv.join(" ")).toBe(2);
      expect(res.err, argv.join(" ")).toContain("usage: npm create waymark@latest");
    }
    expect(readdirSync(cwd)).toEqual([]);
    expect((await run(["--help"], cwd)).out).toContain("--waymark <spec>");
  });

  it("names: npm's rules for the package, CloudFormation's for the stack", () => {
    expect(packageName("orders.v2")).toBe("orders.v2");
    expect(() => packageName("Orders")).toThrow(ScaffoldError);
    expect(() => packageName("node_modules")).toThrow(/reserved/);
    expect(stackName("expense-approvals")).toBe("ExpenseApprovals");
    expect(stackName("2fa-service")).toBe("App2faService");
    expect(stackName("a.b_c~d")).toBe("ABCD");
  });
});
