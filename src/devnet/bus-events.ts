/**
 * What the node publishes after each commit, in CometBFT 0.38's event-bus shapes: the data
 * websocket subscribers receive and the flattened `<type>.<key>` map queries match against.
 */
import {
  type BlockIdJson,
  type BlockJson,
  type BlockResultsJson,
  CONSENSUS_PARAMS,
  type CommittedTx,
  eventMap,
} from "./blocks.ts";

export type BusEventKind = "Tx" | "NewBlock" | "NewBlockHeader" | "NewBlockEvents";

export interface BusEvent {
  kind: BusEventKind;
  data: { type: string; value: unknown };
  events: Record<string, string[]>;
}

/** NewBlock, NewBlockHeader and NewBlockEvents for one committed block, in that order. */
export function blockBusEvents(
  block: BlockJson,
  blockId: BlockIdJson,
  results: BlockResultsJson,
  numTxs: number,
): BusEvent[] {
  const blockEvents = results.finalize_block_events;
  return [
    {
      kind: "NewBlock",
      data: {
        type: "tendermint/event/NewBlock",
        value: {
          block,
          block_id: blockId,
          result_finalize_block: {
            events: blockEvents,
            txs_results: results.txs_results,
            validator_updates: [],
            consensus_param_updates: CONSENSUS_PARAMS,
            app_hash: results.app_hash,
          },
        },
      },
      events: eventMap(blockEvents, { "tm.event": ["NewBlock"] }),
    },
    {
      kind: "NewBlockHeader",
      data: { type: "tendermint/event/NewBlockHeader", value: { header: block.header } },
      events: eventMap(blockEvents, { "tm.event": ["NewBlockHeader"] }),
    },
    {
      kind: "NewBlockEvents",
      data: {
        type: "tendermint/event/NewBlockEvents",
        value: { height: block.header.height, events: blockEvents, num_txs: String(numTxs) },
      },
      events: eventMap(blockEvents, { "tm.event": ["NewBlockEvents"] }),
    },
  ];
}

/** The Tx event of one committed tx (the key really is `TxResult`: CometBFT embeds the struct). */
export function txBusEvent(height: string, tx: CommittedTx): BusEvent {
  return {
    kind: "Tx",
    data: {
      type: "tendermint/event/Tx",
      value: {
        TxResult: { height, index: tx.index, tx: Buffer.from(tx.tx).toString("base64"), result: tx.result },
      },
    },
    events: eventMap(tx.result.events, { "tm.event": ["Tx"], "tx.hash": [tx.hash], "tx.height": [height] }),
  };
}
