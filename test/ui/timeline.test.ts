/**
 * Issue 21 item 3 in a real browser (Debian's Chromium through playwright-core, JavaScript off):
 * the run page of `waymark dev test/ui/timeline-flows.ts` draws a real run as a waterfall —
 * sequential steps, a retried step with its delay, a `Promise.all` on two lanes, a `step.map`
 * with a lane per item, a wait labelled with who answered, a sleep, a child linked to its own
 * page — and a failed trip's compensation marked. `waymark dashboard --table` over a DynamoDB
 * (Local) table holding the same journals draws the same picture.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { createLocalRuntime, type LocalRuntime } from "waymark/local";
import { DynamoJournalStore } from "../../lib/aws/dynamodb-store.ts";
import { TERMINAL_STATUSES } from "../../lib/ports.ts";
import { tempDir } from "../http/helpers.ts";
import { localDynamoClient } from "../setup/clients.ts";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../setup/local-aws.ts";
import { createJournalTable, deleteTable } from "../setup/tables.ts";
import { until } from "../support/until.ts";
import { type DevProcess, launchBrowser, screenshotPath, startWaymark, startWaymarkDev } from "./browser.ts";
import { fulfilment, payment, trip } from "./timeline-flows.ts";

const dir = tempDir("waymark-ui-timeline-");
const dynamo = localDynamoClient();
let dev: DevProcess;
let deployed: DevProcess | undefined;
let api: LocalRuntime;
let browser: Browser;
let context: BrowserContext;
let table = "";

const finished = (runId: string) =>
  until(`${runId} to finish`, async () => {
    const r = await api.client.get(runId);
    return TERMINAL_STATUSES.has(r.status) ? r : undefined;
  }, 300_000);

beforeAll(async () => {
  dev = await startWaymarkDev("test/ui/timeline-flows.ts", dir);
  api = createLocalRuntime({ workflows: [fulfilment, payment, trip], file: join(dir, "journal.db") }); // a client on the same file; the dev process runs the runs
  browser = await launchBrowser();
  context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(15_000);
  await api.client.start(fulfilment, { runId: "order-t1", input: { orderId: "t1" } });
  await api.client.start(trip, { runId: "trip-t1", input: { city: "Leith" } });
  await until("order-t1 to wait for approval", async () => (await api.client.get("order-t1")).waitingFor === "signal:approval", 90_000);
  // While it waits, the page draws the wait open, up to now.
  const waiting = await context.newPage();
  await waiting.goto(`${dev.url}/ui/runs/order-t1`);
  expect(await waiting.locator('svg.wf-chart g.wf-item[data-step="approval"]').getAttribute("data-status")).toBe("waiting");
  expect(await waiting.locator("svg.wf-chart line.wf-now").count()).toBe(1);
  await waiting.close();
  await api.client.signal("order-t1", "approval", { approved: true, approver: "ana@shop.test" }, { sender: { id: "ana@shop.test", verified: false } });
  await finished("order-t1");
  await finished("trip-t1");
}, 180_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await deployed?.stop();
  await api?.close();
  await dev?.stop();
  if (table) await deleteTable(dynamo, table);
  dynamo.destroy();
});

const bar = (page: Page, stepId: string): Locator => page.locator(`svg.wf-chart g.wf-item[data-step="${stepId}"]`);
const box = async (l: Locator) => {
  const b = await l.boundingBox();
  if (!b) throw new Error("not drawn");
  return b;
};
const laneOf = (page: Page, stepId: string) => page.locator("svg.wf-chart g.wf-lane", { has: page.locator(`g.wf-item[data-step="${stepId}"]`) }).getAttribute("data-label");

describe("the run page's waterfall", () => {
  it("draws a real run: steps in order, a retry, parallel branches and map items on their own lanes, a wait with who answered, a sleep, a child", async () => {
    const page = await context.newPage();
    await page.goto(`${dev.url}/ui/runs/order-t1`);
    await expect(page.locator("h1 .status").textContent()).resolves.toBe("completed");
    const steps = ["reserve", "quote", "fraud_check", "stock_check", "label[0]/print", "label[1]/print", "label[2]/print", "label[3]/print", "approval", "cool-off", "pay", "ship"];
    for (const s of steps) await expect(bar(page, s).count(), s).resolves.toBe(1);
    // Every bar says what it is: a <title> as its tooltip and accessible name.
    await expect(page.locator("svg.wf-chart g.wf-item > title").count()).resolves.toBe(steps.length);
    // On the time axis, in the order they ran.
    const [reserve, quote, fraud, stock, approval, cool, pay, ship] = await Promise.all(["reserve", "quote", "fraud_check", "stock_check", "approval", "cool-off", "pay", "ship"].map((s) => box(bar(page, s))));
    for (const [a, b] of [[reserve, quote], [quote, fraud], [fraud, approval], [approval, cool], [cool, pay], [pay, ship]] as const) expect(a!.x + a!.width).toBeLessThanOrEqual(b!.x + 1);
    // The retry: a failed attempt, its delay, the attempt that succeeded.
    for (const cls of ["wf-attempt", "wf-retry", "wf-ok"]) await expect(bar(page, "quote").locator(`.${cls}`).count(), cls).resolves.toBe(1);
    await expect(bar(page, "quote").locator("title").textContent()).resolves.toContain("attempt 1 failed after");
    // Promise.all: side by side, on two lanes; each map item on a lane of its own, below the run's.
    await expect(laneOf(page, "fraud_check")).resolves.toBe("run");
    await expect(laneOf(page, "stock_check")).resolves.toBe("run ∥ 2");
    expect(Math.abs(fraud!.x - stock!.x)).toBeLessThan(5);
    for (const i of [0, 1, 2, 3]) await expect(laneOf(page, `label[${i}]/print`)).resolves.toBe(`label[${i}]`);
    expect((await box(bar(page, "label[0]/print"))).y).toBeGreaterThan(stock!.y);
    // The wait, with who answered; the sleep.
    await expect(bar(page, "approval").getAttribute("data-status")).resolves.toBe("signalled");
    await expect(bar(page, "approval").locator("title").textContent()).resolves.toMatch(/by signal "approval" .* from ana@shop\.test \(as they said\)/);
    await expect(bar(page, "cool-off").locator(".wf-sleep").count()).resolves.toBe(1);
    await expect(bar(page, "cool-off").locator("title").textContent()).resolves.toMatch(/sleep until .*\((600 ms|0\.6 s)\)/);
    // The table stays below, as the text alternative.
    await expect(page.locator("table tbody tr td:nth-child(2)").allTextContents()).resolves.toEqual(expect.arrayContaining(["reserve", "quote", "approval", "cool-off"]));
    await page.screenshot({ path: screenshotPath("timeline.png", dir), clip: { x: 0, y: 0, width: 1280, height: 640 } });
    // The child's bar links to the child's page, which links back.
    await page.locator(`svg.wf-chart a.wf-link[href="/ui/runs/order-t1%3Apay"]`).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("order-t1:pay");
    for (const s of ["authorize", "settle", "capture"]) await expect(bar(page, s).count(), s).resolves.toBe(1);
    await page.getByRole("link", { name: "order-t1", exact: true }).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("order-t1");
    await page.close();
  }, 120_000);

  it("zooms by a link on the axis, with no script, and back to the whole run", async () => {
    const page = await context.newPage();
    await page.goto(`${dev.url}/ui/runs/order-t1`);
    const whole = { from: Number(await page.locator("svg.wf-chart").getAttribute("data-from")), to: Number(await page.locator("svg.wf-chart").getAttribute("data-to")) };
    await page.locator("svg.wf-chart .wf-axis a").first().click();
    const url = new URL(page.url());
    expect(Number(url.searchParams.get("from"))).toBe(whole.from);
    const to = Number(await page.locator("svg.wf-chart").getAttribute("data-to"));
    expect(to - whole.from).toBeLessThanOrEqual(Math.ceil((whole.to - whole.from) / 10) + 1);
    await expect(bar(page, "reserve").count()).resolves.toBe(1);
    await expect(bar(page, "ship").count()).resolves.toBe(0);
    await page.getByRole("link", { name: "Whole run" }).click();
    await expect(bar(page, "ship").count()).resolves.toBe(1);
    await page.close();
  });

  it("marks the compensation of a trip whose booking failed for good", async () => {
    const page = await context.newPage();
    await page.goto(`${dev.url}/ui/runs/trip-t1`);
    await expect(page.locator("h1 .status").textContent()).resolves.toBe("failed");
    await expect(bar(page, "book_hotel").getAttribute("data-status")).resolves.toBe("failed");
    await expect(bar(page, "cancel_flight").getAttribute("class")).resolves.toContain("wf-comp");
    await expect(bar(page, "cancel_flight").locator("title").textContent()).resolves.toContain("compensation: started after book_hotel failed");
    await expect(bar(page, "book_flight").getAttribute("class")).resolves.not.toContain("wf-comp");
    await expect(page.locator("svg.wf-chart line.wf-m-turn").count()).resolves.toBe(1);
    await page.close();
  });

  it("is the same picture on `waymark dashboard --table` over a DynamoDB table holding the same journals", async () => {
    table = await createJournalTable(dynamo, "ui-timeline");
    const store = new DynamoJournalStore({ client: dynamo, tableName: table });
    for (const runId of ["order-t1", "order-t1:pay", "trip-t1"]) {
      const j = await api.store.loadJournal(runId);
      if (!j) throw new Error(`no ${runId}`);
      await store.createRun({ runId, workflow: j.run.workflow, input: j.run.input, createdAt: j.run.createdAt });
      for (const r of j.records) await store.appendRecord(runId, r);
      const grant = await store.acquireLease(runId, { owner: "copy", now: j.run.createdAt, ttlMs: 60_000 });
      if (!grant.acquired) throw new Error(`${runId}: no lease`);
      const status = j.run.status as "completed" | "failed";
      await store.finishRun(runId, { now: j.run.updatedAt, status, expect: { token: grant.lease.token }, ...(j.run.result === undefined ? {} : { result: j.run.result }), ...(j.run.error ? { error: j.run.error } : {}) });
    }
    deployed = await startWaymark(["dashboard", "--table", table, "--port", "0"], {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: inject("dynamodbEndpoint"),
    });
    const page = await context.newPage();
    for (const runId of ["order-t1", "trip-t1"]) {
      await page.goto(`${dev.url}/ui/runs/${runId}`);
      const local = await page.locator("svg.wf-chart").innerHTML();
      await page.goto(`${deployed.url}/ui/runs/${runId}`);
      await expect(page.locator("header .muted").textContent()).resolves.toBe(`table ${table}`);
      expect(await page.locator("svg.wf-chart").innerHTML()).toBe(local);
    }
    await page.goto(`${deployed.url}/ui/runs/order-t1`);
    await page.locator(`svg.wf-chart a.wf-link[href="/ui/runs/order-t1%3Apay"]`).click();
    await expect(bar(page, "capture").count()).resolves.toBe(1);
    await page.close();
  }, 120_000);
});
