import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";

/**
 * An append-only JSON-lines file: the fake providers' own "database". Each append is one
 * `write(2)`, so it survives the process being killed (it is in the OS page cache at once).
 */
export class JsonLinesFile<T> {
  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
  }

  append(entry: T): void {
    appendFileSync(this.path, `${JSON.stringify(entry)}\n`);
  }

  read(): T[] {
    if (!existsSync(this.path)) return [];
    return readFileSync(this.path, "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as T);
  }
}
