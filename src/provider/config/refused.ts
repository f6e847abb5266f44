/**
 * A config key either takes effect or providerd refuses it. These keys are in the
 * reference's configuration but their feature is not built here yet, so setting one (in
 * the file or as `PROVIDER_<KEY>`, whatever its value) is a problem that says why. The
 * work that makes a key effective deletes its line (the schema already holds its type,
 * default and rules). `atDefault` keys are accepted at their default, for config files
 * written for the reference.
 */
export interface Refusal {
  /** Why, and what to do; follows "<key>: ". */
  reason: string;
  /** Which issue makes the key effective. */
  until: string;
  atDefault?: true;
}

export type RefusedKeys = Readonly<Record<string, Refusal>>;

const GRPC = "this implementation reads the chain through CometBFT RPC: set rpc_url";

export const REFUSED_KEYS: RefusedKeys = {
  grpc_endpoint: { reason: GRPC, until: "never", atDefault: true },
  grpc_tls_enabled: { reason: GRPC, until: "never", atDefault: true },
  grpc_tls_ca_file: { reason: GRPC, until: "never", atDefault: true },
  grpc_tls_skip_verify: { reason: GRPC, until: "never", atDefault: true },
};
