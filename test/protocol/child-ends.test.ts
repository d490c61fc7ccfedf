/**
 * Issue 19, item 3: a child's end costs its parent one write, the `__child` signal. It marks the
 * parent due and wakes it only when the parent would not see the signal otherwise: not when the
 * parent is already due (another child woke it); while an invocation holds its lease, it only
 * marks it due on release (that invocation's release answers the mark's time, and it wakes
 * itself, reading nothing; if it never gets to, the release has left the run due). Each interleaving is exact,
 * on a real SQLite journal; the lost-wake guarantee is checked as the watchdog sees it (the
 * parent is due, `listDueRuns` finds it).
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durable, type Wake } from "waymark";
import { PausingStore } from "../support/pausing-store.ts";
import { type SqliteLab, sqliteLab } from "../support/sqlite-lab.ts";

let lab: SqliteLab;
afterEach(() => lab?.close());

const kid = durable({ name: "kid", input: z.object({ i: z.number() }) }, async ({ i }, step) => step.run("work", () => i * 10));
const parent = durable({ name: "kids-parent", input: z.object({}) }, async (_in, step) =>
  Promise.all([0, 1, 2].map((i) => step.invoke(`kid-${i}`, kid, { input: { i }, runId: `kid-${i}` }))),
);

const parentSignalWakes = () => lab.scheduled.filter((w) => w.runId === "p" && w.reason === "signal").length;

describe("a child's end and its parent", () => {
  it("wakes a parent that is suspended and not due, then not again while it is due; a lost wake leaves it due for the watchdog; a parent holding its lease wakes itself", async () => {
    lab = sqliteLab([parent, kid]);
    const client = lab.client();
    await client.start(parent, { runId: "p", input: {} });
    expect(await lab.engine("E").invoke("p")).toMatchObject({ status: "suspended" });
    expect((await lab.store.getRun("p"))?.wakeAt).toBeUndefined();

    // The first child ends: the parent was not due, so it is marked due and woken.
    expect(await lab.engine("E").invoke("kid-0")).toMatchObject({ status: "completed" });
    expect(parentSignalWakes()).toBe(1);
    expect((await lab.store.getRun("p"))?.wakeAt).toBe(lab.clock.now());

    // The second ends while that wake is on its way: the parent is due, nothing more is written.
    lab.clock.advance(5);
    expect(await lab.engine("E").invoke("kid-1")).toMatchObject({ status: "completed" });
    expect(parentSignalWakes()).toBe(1);

    // Say that one wake was lost: the watchdog finds the parent by its due time.
    await lab.wakes.cancel("p", "signal");
    expect((await lab.store.listDueRuns(lab.clock.now(), 10)).map((r) => r.runId)).toContain("p");

    // The watchdog's invocation of the parent is held just before it releases the lease, and
    // the last child ends meanwhile: it leaves the parent alone (the lease is held)...
    const pausing = new PausingStore(lab.store);
    const held = pausing.hold("releaseLease", "before", (args) => args[0] === "p");
    const watchdog = lab.engine("W", pausing.store).invoke("p");
    await held.reached;
    expect(await lab.engine("E").invoke("kid-2")).toMatchObject({ status: "completed" });
    expect(parentSignalWakes()).toBe(1);
    // ...and the parent's release answers the mark: it wakes itself, reading nothing after it.
    const reading = pausing.hold("loadJournal", "before", (args) => args[0] === "p");
    held.release();
    expect(await Promise.race([watchdog.then(() => "released"), reading.reached.then(() => "read after the release")])).toBe("released");
    expect(await watchdog).toMatchObject({ status: "suspended" });
    expect(parentSignalWakes()).toBe(2);
    expect(await lab.engine("E").invoke("p")).toEqual({ status: "completed", result: [0, 10, 20] });
  });
});

/**
 * Simulator seed 671726272: a child's end reached its parent's journal while an invocation of the
 * parent held the lease, so the child left the parent alone (the holder wakes itself after it
 * releases). That invocation released the run as suspended, with no wake time (a wait for a
 * signal has none), and then failed before it woke the run: the parent sat suspended, due never, a
 * signal in its journal, found by no watchdog once the wake that had invoked it was lost too.
 * (Then the holder read the signals after its release; now its release answers the mark, and the
 * step that can fail after it is the wake it sends.)
 */
describe("a child's end while its parent holds the lease, and a parent that never reads it", () => {
  it("leaves the parent due once released, so the watchdog finds it whatever happens to the holder after the release", async () => {
    lab = sqliteLab([parent, kid]);
    await lab.client().start(parent, { runId: "p", input: {} });
    expect(await lab.engine("E").invoke("p")).toMatchObject({ status: "suspended" });
    expect(await lab.engine("E").invoke("kid-0")).toMatchObject({ status: "completed" });
    expect(await lab.engine("E").invoke("kid-1")).toMatchObject({ status: "completed" });
    await lab.wakes.cancel("p", "signal");

    // An invocation of the parent (it sees two ends, waits for the third) is held before it
    // releases; the last child ends meanwhile and leaves the parent to it.
    const pausing = new PausingStore(lab.store);
    const held = pausing.hold("releaseLease", "before", (args) => args[0] === "p");
    let sendFails = false;
    const failing = {
      schedule: async (w: Wake) => {
        if (sendFails && w.runId === "p") throw Object.assign(new Error("wake: unreachable (injected)"), { name: "TransientStoreError" });
        return lab.wakes.schedule(w);
      },
      cancel: (runId: string, key: string) => lab.wakes.cancel(runId, key),
    };
    const holder = lab.engine("W", pausing.store, { wakes: failing }).invoke("p");
    await held.reached;
    expect(await lab.engine("E").invoke("kid-2")).toMatchObject({ status: "completed" });
    // The release is applied; the wake the holder sends after it fails (the holder dies there, or
    // the queue is unreachable).
    sendFails = true;
    held.release();
    await expect(holder).rejects.toThrow("unreachable (injected)");

    const run = await lab.store.getRun("p");
    expect(run).toMatchObject({ status: "suspended" });
    expect(run?.lease).toBeUndefined();
    // No wake reached it; the watchdog's scan must still see it due.
    expect((await lab.store.listDueRuns(lab.clock.now(), 10)).map((r) => r.runId)).toContain("p");
    expect(await lab.engine("E").invoke("p")).toEqual({ status: "completed", result: [0, 10, 20] });
  });
});

/**
 * A child reads its parent leased, and the parent's release lands before the child's mark: the
 * mark makes the suspended parent due. Read leased, the child used to leave the wake to the
 * holder, whose release had already answered without the mark: the parent waited for the
 * watchdog's sweep. `markDue` now says it made the run due, and the child wakes it.
 */
describe("a child's end whose parent releases between the child's read and its mark", () => {
  it("is woken by the child, at once", async () => {
    lab = sqliteLab([parent, kid]);
    await lab.client().start(parent, { runId: "p", input: {} });
    expect(await lab.engine("E").invoke("p")).toMatchObject({ status: "suspended" });
    expect(await lab.engine("E").invoke("kid-0")).toMatchObject({ status: "completed" });
    expect(await lab.engine("E").invoke("kid-1")).toMatchObject({ status: "completed" });

    // An invocation of the parent is held before its release; the last child reads it leased and
    // is held before its mark; then the parent releases (nothing marked it yet), then the mark.
    const parentSide = new PausingStore(lab.store);
    const releasing = parentSide.hold("releaseLease", "before", (args) => args[0] === "p");
    const holder = lab.engine("W", parentSide.store).invoke("p");
    await releasing.reached;
    const childSide = new PausingStore(lab.store);
    const marking = childSide.hold("markDue", "before", (args) => args[0] === "p");
    const child = lab.engine("C", childSide.store).invoke("kid-2");
    await marking.reached;
    const wakesBefore = parentSignalWakes();
    releasing.release();
    expect(await holder).toMatchObject({ status: "suspended" });
    expect(parentSignalWakes()).toBe(wakesBefore);
    marking.release();
    expect(await child).toMatchObject({ status: "completed" });

    // The parent is due and a wake for it is on its way: it does not wait for the watchdog.
    expect((await lab.store.getRun("p"))?.wakeAt).toBeLessThanOrEqual(lab.clock.now());
    expect(parentSignalWakes()).toBe(wakesBefore + 1);
    expect(await lab.engine("E").invoke("p")).toEqual({ status: "completed", result: [0, 10, 20] });
  });
});
