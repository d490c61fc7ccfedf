import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { PayloadStore } from "../ports.ts";

/**
 * Payloads by reference in a directory (by default beside the SQLite journal file: `journal.db`
 * → `journal.db.payloads/`), one file per key. A put writes a temporary file and renames it into
 * place, so a reader never sees half an object and a crash leaves none; putting a key again (a
 * retry, or the same value twice) is a no-op.
 *
 * @example
 * ```ts
 * const store = new DirPayloadStore(".waymark/journal.db.payloads");
 * await store.put("runs/r-1/1767225600000/ab12…", bytes);
 * ```
 */
export class DirPayloadStore implements PayloadStore {
  constructor(readonly dir: string) {}

  async put(key: string, body: Uint8Array): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.${globalThis.crypto.randomUUID().slice(0, 8)}.tmp`;
    await writeFile(tmp, body, { flag: "wx" });
    // Atomic on one file system; replacing an existing object writes identical bytes.
    await rename(tmp, path);
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await readFile(this.pathOf(key)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  }

  /** Retention: removes one run incarnation's folder (`runs/<runId>/<createdAt>/`). */
  async deletePrefix(prefix: string): Promise<void> {
    if (!prefix.endsWith("/")) throw new RangeError(`deletePrefix takes a folder prefix ending in "/", not ${JSON.stringify(prefix)}`);
    await rm(this.pathOf(prefix.slice(0, -1)), { recursive: true, force: true });
  }

  /** Each key segment as a file name: escaped, and never `.` or `..` (run ids may contain dots). */
  private pathOf(key: string): string {
    const segments = key.split("/").map((s) => encodeURIComponent(s).replace(/^\./, "%2E"));
    return join(this.dir, ...segments);
  }
}

/** The directory beside a journal file where its payloads go. */
export function payloadDirFor(journalFile: string): string {
  return `${journalFile}.payloads`;
}
