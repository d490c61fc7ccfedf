/**
 * The SQS messages one Lambda container has handled to their end, remembered so that a
 * redelivery of one (SQS delivers at least once; every copy carries the message's id) is
 * acknowledged here without a request. Only messages whose handling returned — the run invoked,
 * refused, sent back early — are remembered: one that failed is handled again when it comes back.
 * What a remembered message asked for is done and durable, so its copy has nothing left to do
 * (a copy that reaches another container costs that container its refused grant, as before).
 * Bounded, the oldest forgotten first.
 *
 * @example
 * ```ts
 * const handled = new HandledMessages(2);
 * handled.add("m-1");
 * handled.has("m-1"); // true: a redelivery
 * ```
 */
export class HandledMessages {
  private readonly ids = new Set<string>();

  constructor(private readonly max = 1_024) {}

  has(messageId: string): boolean {
    return this.ids.has(messageId);
  }

  add(messageId: string): void {
    this.ids.add(messageId);
    if (this.ids.size <= this.max) return;
    const oldest = this.ids.values().next();
    if (!oldest.done) this.ids.delete(oldest.value);
  }
}
