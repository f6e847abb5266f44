/** `block_results` finalize-block events of one height: the feed's fallback and gap filler. */
import { chainError, type NodeConnection } from "./rpc.ts";

export function blockEventsFetcher(
  conn: NodeConnection,
): (height: number, signal: AbortSignal) => Promise<unknown> {
  return async (height, signal) => {
    signal.throwIfAborted();
    try {
      return await conn.blockEvents(height);
    } catch (err) {
      throw chainError(err, `block_results ${height}`);
    }
  };
}
