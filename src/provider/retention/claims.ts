import type { KeyedMutex } from "../../core/async/index.ts";

/**
 * Holds the lease queue of both `a` and `b` while `work` runs. Both keys are claimed in one
 * synchronous step, in sorted order (the caller has just checked that neither is busy), so
 * no other lease work can slip in between the two claims and two restores sharing a lease
 * can never wait on each other in opposite orders.
 */
export async function holdBoth<T>(
  queue: KeyedMutex,
  a: string,
  b: string,
  work: () => Promise<T>,
): Promise<T> {
  const [first, second] = a < b ? [a, b] : [b, a];
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const claimed = (key: string) =>
    new Promise<void>((resolve) => {
      void queue.run(key, () => {
        resolve();
        return held;
      });
    });
  const both = Promise.all([claimed(first), claimed(second)]);
  try {
    await both;
    return await work();
  } finally {
    release();
  }
}
