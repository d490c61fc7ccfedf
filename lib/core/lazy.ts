/**
 * Lazy reads of values stored by reference. A replayed step whose result is in the payload store
 * resolves to a {@link Later}; {@link lazy} turns the step's promise into one that reads the value
 * only when user code first awaits it (calls `then`), never when the journal is loaded, and not
 * at all for a result the code never awaits.
 */

/** A value to be read when asked for. */
export class Later<T> {
  constructor(readonly load: () => Promise<T>) {}
}

/**
 * A promise of `inner`'s value that starts reading a {@link Later} only on its first `then`,
 * `catch` or `finally`. Awaitable and chainable like any promise (it is not an `instanceof
 * Promise`).
 *
 * @example
 * ```ts
 * const p = lazy(Promise.resolve(new Later(() => store.read(key))));
 * // nothing read yet
 * const value = await p; // read now
 * ```
 */
export function lazy<T>(inner: Promise<T | Later<T>>): Promise<T> {
  let started: Promise<T> | undefined;
  const start = (): Promise<T> => (started ??= inner.then((v) => (v instanceof Later ? v.load() : v)));
  const promise: Promise<T> = {
    then<A = T, B = never>(onFulfilled?: ((value: T) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
      return start().then(onFulfilled, onRejected);
    },
    catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<T | B> {
      return start().catch(onRejected);
    },
    finally(onFinally?: (() => void) | null): Promise<T> {
      return start().finally(onFinally);
    },
    [Symbol.toStringTag]: "Promise",
  };
  return promise;
}
