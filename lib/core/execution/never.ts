/** A promise that never settles: what a step returns once the execution has ended (its outcome is decided elsewhere). */
export const never = <T>(): Promise<T> => new Promise<T>(() => {});
