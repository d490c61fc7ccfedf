/**
 * Issue 12 in a real browser (Debian's Chromium through playwright-core) against
 * `waymark dev functions/order-flow.ts` run as a process: an approver opens the link they were
 * mailed, approves with JavaScript off, and sees the result; an operator finds a run, reads its
 * timeline, cancels it, starts another from the input form, watches it update live and
 * approves it from the dashboard.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { orderFlow, type Order } from "../../functions/order-flow.ts";
import { FakeShop } from "../../functions/services/shop.ts";
import { tempDir } from "../http/helpers.ts";
import { until } from "../support/until.ts";
import { type DevProcess, launchBrowser, screenshotPath, startWaymarkDev } from "./browser.ts";

const dir = tempDir("waymark-ui-");
const order = (id: string, approverEmail?: string): Order => ({ orderId: id, sku: "LAMP-01", quantity: 2, amount: 129.5, email: "kim@example.com", address: "1 Harbour St, Leith", ...(approverEmail ? { approverEmail } : {}) });

let dev: DevProcess;
let api: LocalRuntime;
let browser: Browser;

beforeAll(async () => {
  dev = await startWaymarkDev("functions/order-flow.ts", dir, { WAYMARK_DEMO_DIR: join(dir, "demo"), WAYMARK_WEBHOOK_SECRET: "ui-test-secret-0123456789abcdef0123" });
  api = createLocalRuntime({ workflows: [orderFlow], file: join(dir, "journal.db") }); // a client on the same file; the dev process runs the runs
  browser = await launchBrowser();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
  await dev?.stop();
});

describe("the approver", () => {
  it("opens the mailed link, approves without JavaScript, and sees the result", async () => {
    await api.client.start(orderFlow, { runId: "order-7001", input: order("7001", "ana@shop.test") });
    const mail = await until("the approval mail", () => new FakeShop(join(dir, "demo")).approvalMails().find((m) => m.orderId === "7001" && m.url));
    expect(mail.url).toMatch(new RegExp(`^${dev.url}/approvals/`));
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(mail.url ?? "");
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Approval requested");
    await expect(page.locator(".summary").textContent()).resolves.toContain("Order 7001: 2 × LAMP-01 for 129.50 EUR");
    await expect(page.locator("dt", { hasText: "Answer by" }).count()).resolves.toBe(1);
    await page.getByLabel("approver").fill("ana@shop.test");
    await page.getByLabel("note").fill("Fine by me");
    await page.screenshot({ path: screenshotPath("approver-page.png", dir), fullPage: true });
    await page.getByRole("button", { name: "Approve" }).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Approved");
    await expect(page.getByRole("status").textContent()).resolves.toContain("Your answer was recorded");
    const run = await until("order-7001 to finish", async () => {
      const r = await api.client.get("order-7001");
      return r.status === "completed" ? r : undefined;
    });
    expect(run.result).toMatchObject({ status: "shipped", approvedBy: "ana@shop.test" });
    // The link again, later: the decision, no form.
    await page.goto(mail.url ?? "");
    await expect(page.locator("form").count()).resolves.toBe(0);
    await context.close();
  });

  it("a tampered link shows a clear page", async () => {
    const page = await browser.newPage();
    const res = await page.goto(`${dev.url}/approvals/eyJ2IjoyfQ.${"A".repeat(43)}`);
    expect(res?.status()).toBe(404);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("This link is not valid");
    await page.close();
  });
});

describe("the operator", () => {
  it("finds a run, reads its timeline, cancels it, starts another, and approves it as it updates live", async () => {
    for (const id of ["8001", "8002", "8003"]) await api.client.start(orderFlow, { runId: `order-${id}`, input: order(id) });
    await until("the runs to wait for approval", async () => (await api.client.list({ status: "suspended" })).runs.length >= 3);
    const page = await browser.newPage();
    await page.goto(`${dev.url}/`);
    await page.getByLabel("Search run ids and workflows").fill("8002");
    await page.getByRole("button", { name: "Search" }).click();
    const rows = page.locator("tbody tr");
    await expect(rows.count()).resolves.toBe(1);
    await page.getByRole("link", { name: "order-8002" }).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("order-8002");
    const steps = await page.locator("table tbody tr td:nth-child(2)").allTextContents();
    expect(steps).toEqual(expect.arrayContaining(["reserve", "fraud_check", "approval"]));
    await expect(page.getByRole("heading", { name: "Waiting for signal “approval”" }).count()).resolves.toBe(1);
    await page.getByRole("button", { name: "Cancel run" }).click();
    // The cancel is requested: the run compensates, then ends, maybe after the redirect's page.
    await until("the run's page to show it cancelled", async () => {
      if ((await page.locator("h1 .status").textContent()) === "cancelled") return true;
      await page.reload();
      return false;
    });
    expect((await api.client.get("order-8002")).status).toBe("cancelled");

    await page.getByRole("link", { name: "Start a run" }).click();
    await page.getByLabel("run id").fill("order-9001");
    await page.getByLabel("orderId").fill("9001");
    await page.getByLabel("sku").fill("DESK-02");
    await page.getByLabel("quantity").fill("1");
    await page.getByLabel("amount").fill("349");
    await page.getByLabel("email", { exact: true }).fill("lee@example.com");
    await page.getByLabel("address").fill("9 Quay Rd, Leith");
    await page.getByRole("button", { name: "Start run" }).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("order-9001");
    // Live: the page shows the wait without a reload once the run gets there.
    await page.getByRole("heading", { name: "Waiting for signal “approval”" }).waitFor({ timeout: 20_000 });
    await page.screenshot({ path: screenshotPath("dashboard-run.png", dir), fullPage: true });
    await page.getByLabel("approver").fill("ops@shop.test");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.locator("h1 .status", { hasText: "completed" }).waitFor({ timeout: 20_000 });
    expect((await api.client.get("order-9001")).result).toMatchObject({ status: "shipped", approvedBy: "ops@shop.test" });

    // Live updates: a decision made elsewhere shows up on an open page without a reload.
    await page.goto(`${dev.url}/ui/runs/order-8001`);
    await page.locator("h1 .status", { hasText: "suspended" }).waitFor();
    await api.client.signal("order-8001", "approval", { approved: false, approver: "someone-else" });
    await page.locator("h1 .status", { hasText: "completed" }).waitFor({ timeout: 20_000 });

    await page.goto(`${dev.url}/`);
    await page.screenshot({ path: screenshotPath("dashboard.png", dir), fullPage: true });
    await page.getByRole("link", { name: "cancelled" }).click();
    await expect(page.locator("tbody tr td:first-child").allTextContents()).resolves.toEqual(["order-8002"]);
    await page.close();
  });
});
