/** MsgUpdateParams and MsgSetItemCustomDomain. */
import {
  BillingMsgUpdateParams,
  BillingMsgUpdateParamsResponse,
  LeaseState,
  MsgSetItemCustomDomain,
  MsgSetItemCustomDomainResponse,
} from "../../../chain/proto/index.ts";
import { isUuidV7 } from "../../economics/uuidv7.ts";
import type { MsgHandler } from "../../module.ts";
import { billingErrors } from "./errors.ts";
import { defineMsg, ev } from "./handler.ts";
import type { BillingDeps } from "./ledger.ts";
import { DEFAULT_PARAMS, validateParams } from "./params.ts";
import { deleteDomain, getDomain, getLease, getParams, putLease, setDomain, setParams } from "./store.ts";
import { checkAddress, fqdnProblem, isDnsLabel } from "./validate.ts";

/** True when `domain` equals a reserved suffix (without its dot) or ends with it at a label boundary. */
export function isReservedDomain(domain: string, suffixes: readonly string[]): boolean {
  const d = domain.toLowerCase();
  return suffixes.some((raw) => {
    const s = raw.toLowerCase();
    return d === s.slice(1) || d.endsWith(s);
  });
}

export function adminMessages(deps: BillingDeps): MsgHandler<unknown>[] {
  const updateParams = defineMsg({
    codec: BillingMsgUpdateParams,
    response: BillingMsgUpdateParamsResponse,
    signer: (m) => m.authority,
    validateBasic(m) {
      checkAddress(billingErrors.unauthorized, "authority", m.authority, deps.prefix);
      validateParams(m.params ?? DEFAULT_PARAMS, deps.prefix);
    },
    execute(ctx, m) {
      if (m.authority.toLowerCase() !== deps.authority)
        throw billingErrors.unauthorized.wrap(`expected ${deps.authority}, got ${m.authority}`);
      setParams(ctx, m.params ?? DEFAULT_PARAMS);
      ctx.emit({ type: "params_updated", attributes: [] });
      return {};
    },
  });

  const setCustomDomain = defineMsg({
    codec: MsgSetItemCustomDomain,
    response: MsgSetItemCustomDomainResponse,
    signer: (m) => m.sender,
    validateBasic(m) {
      checkAddress(billingErrors.unauthorized, "sender", m.sender, deps.prefix);
      if (!isUuidV7(m.leaseUuid)) throw billingErrors.invalidLease.wrap(`invalid lease uuid ${m.leaseUuid}`);
      if (m.serviceName !== "" && !isDnsLabel(m.serviceName))
        throw billingErrors.invalidServiceName.wrap(`${JSON.stringify(m.serviceName)} is not a DNS label`);
      if (m.customDomain !== "") {
        const problem = fqdnProblem(m.customDomain);
        if (problem !== undefined) throw billingErrors.invalidCustomDomain.wrap(problem);
      }
    },
    execute(ctx, m) {
      const lease = getLease(ctx, m.leaseUuid);
      if (lease === undefined) throw billingErrors.leaseNotFound.wrap(m.leaseUuid);
      const sender = m.sender.toLowerCase();
      const params = getParams(ctx);
      let role: string;
      if (sender === lease.tenant) role = "tenant";
      else if (sender === deps.authority) role = "authority";
      else if (params.allowedList.some((a) => a.toLowerCase() === sender)) role = "allowed";
      else throw billingErrors.unauthorized.wrap(`${sender} may not edit ${lease.uuid}`);
      if (lease.state !== LeaseState.LEASE_STATE_PENDING && lease.state !== LeaseState.LEASE_STATE_ACTIVE)
        throw billingErrors.leaseNotEditable.wrap(lease.uuid);
      if (m.serviceName === "" && lease.items.length > 1 && lease.items.some((i) => i.serviceName === ""))
        throw billingErrors.ambiguousLeaseItem.wrap("name the service of a multi-item lease");
      const item = lease.items.find((i) => i.serviceName === m.serviceName);
      if (item === undefined) throw billingErrors.leaseItemNotFound.wrap(m.serviceName);
      const base = { lease_uuid: lease.uuid, tenant: lease.tenant, service_name: m.serviceName };
      if (m.customDomain === "") {
        if (item.customDomain === "") return {};
        const previous = item.customDomain;
        deleteDomain(ctx, previous);
        item.customDomain = "";
        putLease(ctx, lease, lease.state);
        ctx.emit(
          ev("lease_custom_domain_cleared", {
            ...base,
            custom_domain: previous,
            set_by: role,
            provider_uuid: lease.providerUuid,
          }),
        );
        return {};
      }
      if (isReservedDomain(m.customDomain, params.reservedDomainSuffixes))
        throw billingErrors.invalidCustomDomain.wrap(`${m.customDomain} is under a reserved suffix`);
      if (item.customDomain === m.customDomain) return {};
      const claim = getDomain(ctx, m.customDomain);
      if (claim !== undefined) throw billingErrors.customDomainClaimed.wrap(m.customDomain);
      if (item.customDomain !== "") deleteDomain(ctx, item.customDomain);
      item.customDomain = m.customDomain;
      setDomain(ctx, m.customDomain, { leaseUuid: lease.uuid, serviceName: m.serviceName });
      putLease(ctx, lease, lease.state);
      ctx.emit(
        ev("lease_custom_domain_set", {
          ...base,
          custom_domain: m.customDomain,
          set_by: role,
          provider_uuid: lease.providerUuid,
        }),
      );
      return {};
    },
  });

  return [updateParams, setCustomDomain];
}
