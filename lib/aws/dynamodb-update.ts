/**
 * A small builder for `UpdateItem` expressions. Every attribute goes through a `#name`
 * placeholder (`status`, `input`, `result` are DynamoDB reserved words) and every value through
 * a `:value` placeholder, so callers never splice strings by hand.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { TERMINAL_STATUSES } from "../ports.ts";
import { s, type Item } from "./dynamodb-codec.ts";

export class UpdateBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Item = {};
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];

  /** The placeholder of an attribute name. */
  name(attr: string): string {
    this.names[`#${attr}`] = attr;
    return `#${attr}`;
  }

  /** The placeholder of a value; `key` must be unique within the request. */
  value(key: string, v: AttributeValue): string {
    this.values[`:${key}`] = v;
    return `:${key}`;
  }

  set(attr: string, v: AttributeValue): this {
    this.sets.push(`${this.name(attr)} = ${this.value(`v_${attr}`, v)}`);
    return this;
  }

  /** `attr = attr + by` (the attribute must exist: the meta item always has the counters). */
  increment(attr: string, by = 1): this {
    const a = this.name(attr);
    this.sets.push(`${a} = ${a} + ${this.value(`inc_${attr}`, { N: String(by) })}`);
    return this;
  }

  remove(...attrs: string[]): this {
    for (const attr of attrs) this.removes.push(this.name(attr));
    return this;
  }

  setOrRemove(attr: string, v: AttributeValue | undefined): this {
    return v === undefined ? this.remove(attr) : this.set(attr, v);
  }

  /** Sets every attribute of `item`. */
  setAll(item: Item): this {
    for (const [attr, v] of Object.entries(item)) this.set(attr, v);
    return this;
  }

  /** `NOT (#status IN (completed, failed, cancelled))`. */
  notFinished(): string {
    const placeholders = [...TERMINAL_STATUSES].map((st) => this.value(`st_${st}`, s(st)));
    return `NOT (${this.name("status")} IN (${placeholders.join(", ")}))`;
  }

  get expression(): string {
    const parts: string[] = [];
    if (this.sets.length > 0) parts.push(`SET ${this.sets.join(", ")}`);
    if (this.removes.length > 0) parts.push(`REMOVE ${this.removes.join(", ")}`);
    return parts.join(" ");
  }
}
