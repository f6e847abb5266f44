import {
  QueryLeasesByProviderRequest,
  QueryLeasesByProviderResponse,
  toBytes,
} from "../../chain/proto/index.ts";
import { FredError } from "../../core/errors.ts";

/**
 * The one chain question `fred placement init` asks: has this provider EVER had a lease
 * (any state)? A provider with history must restore its placement store, never create
 * a fresh one. A port, so the full chain client can answer it later; until then this
 * adapter asks a CometBFT node directly with `abci_query`.
 */
export interface ChainHistory {
  hasLeaseHistory(providerUuid: string, signal?: AbortSignal): Promise<boolean>;
}

const PATH = "/liftedinit.billing.v1.Query/LeasesByProvider";

export class CometRpcChainHistory implements ChainHistory {
  constructor(private readonly rpcUrl: string) {}

  async hasLeaseHistory(providerUuid: string, signal?: AbortSignal): Promise<boolean> {
    // state_filter 0 (unspecified) = every state; one lease is enough to answer.
    const data = toBytes(
      QueryLeasesByProviderRequest,
      QueryLeasesByProviderRequest.fromPartial({ providerUuid, pagination: { limit: 1n }, stateFilter: 0 }),
    );
    const request = {
      jsonrpc: "2.0",
      id: 1,
      method: "abci_query",
      params: { path: PATH, data: Buffer.from(data).toString("hex"), height: "0", prove: false },
    };
    let json: unknown;
    try {
      const res = await fetch(this.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
        ...(signal === undefined ? {} : { signal }),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      json = await res.json();
    } catch (err) {
      throw new FredError(
        "ERR_CHAIN_UNAVAILABLE",
        `chain RPC ${this.rpcUrl} did not answer: ${(err as Error).message}`,
        {
          retryable: true,
          cause: err,
        },
      );
    }
    const response = (
      json as { result?: { response?: { code?: number; value?: string | null; log?: string } } }
    ).result?.response;
    if (response === undefined) {
      throw new FredError("ERR_CHAIN_QUERY", `chain RPC ${this.rpcUrl} returned no abci_query result`);
    }
    if ((response.code ?? 0) !== 0) {
      throw new FredError(
        "ERR_CHAIN_QUERY",
        `LeasesByProvider failed on chain: ${response.log ?? `code ${response.code}`}`,
      );
    }
    const decoded = QueryLeasesByProviderResponse.decode(Buffer.from(response.value ?? "", "base64"));
    return decoded.leases.length > 0;
  }
}
