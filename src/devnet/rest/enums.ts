/**
 * The schema facts the codecs do not carry and the gateway JSON needs: the value names of the
 * enum fields of our field-table codecs (the gateway writes enums by name) and of the enum
 * request fields a query string may name (`state_filter=LEASE_STATE_ACTIVE`, `order_by=…`).
 */
import { BroadcastMode, OrderBy } from "cosmjs-types/cosmos/tx/v1beta1/service";
import { LeaseState, Unit } from "../../chain/proto/index.ts";

type EnumTable = Readonly<Record<string, number>>;

const leaseState = LeaseState as unknown as EnumTable;
const unit = Unit as unknown as EnumTable;
/** ts-proto enums map both ways; keep the name → number half. */
function namesOf(e: Record<string, string | number>): EnumTable {
  return Object.fromEntries(Object.entries(e).filter(([, v]) => typeof v === "number")) as EnumTable;
}

/** `<message type URL>#<field>` (field as the codec names it) → the enum's name → number table. */
const ENUM_FIELDS: Record<string, EnumTable> = {
  "/liftedinit.billing.v1.Lease#state": leaseState,
  "/liftedinit.billing.v1.QueryLeasesRequest#stateFilter": leaseState,
  "/liftedinit.billing.v1.QueryLeasesByTenantRequest#stateFilter": leaseState,
  "/liftedinit.billing.v1.QueryLeasesByProviderRequest#stateFilter": leaseState,
  "/liftedinit.billing.v1.QueryLeasesBySKURequest#stateFilter": leaseState,
  "/liftedinit.sku.v1.SKU#unit": unit,
  "/cosmos.tx.v1beta1.GetTxsEventRequest#orderBy": namesOf(OrderBy),
  "/cosmos.tx.v1beta1.BroadcastTxRequest#mode": namesOf(BroadcastMode),
};

export function enumTable(typeUrl: string, field: string): EnumTable | undefined {
  return ENUM_FIELDS[`${typeUrl}#${field}`];
}

export function enumName(typeUrl: string, field: string, value: number): string | undefined {
  const table = enumTable(typeUrl, field);
  if (table === undefined) return undefined;
  return Object.entries(table).find(([, v]) => v === value)?.[0];
}
