import type pg from "pg";

/** Runs `work` in one transaction on its own connection (the leader's `fenced` is one too). */
export type TransactionRunner = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

/**
 * One transaction: committed when `work` resolves, rolled back when it throws (and the
 * error rethrown). A connection that failed is handed back as broken, so the pool drops it.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch((rollbackFailed: Error) => {
      broken = rollbackFailed;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}
