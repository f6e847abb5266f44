/**
 * x/authz for the devnet: MsgGrant / MsgExec / MsgRevoke with GenericAuthorization (what
 * providerd's sub-signers use) and optional expiry, plus the three grant queries cosmjs's
 * AuthzExtension calls. Expired grants are invisible and unusable from their expiry on.
 */
import {
  GenericAuthorization,
  type Grant,
  GrantAuthorization,
} from "cosmjs-types/cosmos/authz/v1beta1/authz";
import {
  QueryGranteeGrantsRequest,
  QueryGranteeGrantsResponse,
  QueryGranterGrantsRequest,
  QueryGranterGrantsResponse,
  QueryGrantsRequest,
  QueryGrantsResponse,
} from "cosmjs-types/cosmos/authz/v1beta1/query";
import {
  MsgExec,
  MsgExecResponse,
  MsgGrant,
  MsgGrantResponse,
  MsgRevoke,
  MsgRevokeResponse,
} from "cosmjs-types/cosmos/authz/v1beta1/tx";
import type { PageRequest } from "../../../chain/proto/index.ts";
import { defineError } from "../../errors.ts";
import type { AppHandle, DevnetModule, ExecContext, MsgHandler, QueryContext } from "../../module.ts";
import { grpcError, paginate } from "../../query-kit.ts";
import { addressProblem } from "../sku/validate.ts";

export const AUTHZ = "authz";
const GENERIC_URL = "/cosmos.authz.v1beta1.GenericAuthorization";

export const authzErrors = {
  notFound: defineError(AUTHZ, 2, "authorization not found"),
  invalidExpiration: defineError(
    AUTHZ,
    3,
    "expiration time of authorization should be more than current time",
  ),
  unknownAuthorization: defineError(AUTHZ, 4, "unknown authorization type"),
  granteeIsGranter: defineError(AUTHZ, 7, "grantee and granter should be different"),
  numSigners: defineError(AUTHZ, 9, "authorization can be given to msg with only one signer"),
  invalidAddress: defineError("sdk", 7, "invalid address"),
  invalidRequest: defineError("sdk", 18, "invalid request"),
};

const grantKey = (granter: string, grantee: string, url = "") => `g/${granter}/${grantee}/${url}`;
const granteeKey = (grantee: string, granter: string, url = "") => `ge/${grantee}/${granter}/${url}`;
const EMPTY = new Uint8Array();

function expiresNs(grant: Grant): bigint | undefined {
  return grant.expiration === undefined
    ? undefined
    : grant.expiration.seconds * 1_000_000_000n + BigInt(grant.expiration.nanos);
}

function live(grant: Grant, ctx: ExecContext | QueryContext): boolean {
  const exp = expiresNs(grant);
  return exp === undefined || exp > BigInt(ctx.block.timeMs) * 1_000_000n;
}

const jsonAttrs = (attrs: Record<string, string>) =>
  Object.entries(attrs).map(([key, value]) => ({ key, value: JSON.stringify(value) }));

export function authzModule(app: AppHandle): DevnetModule {
  const prefix = app.bech32Prefix;
  const checkAddr = (what: string, address: string) => {
    const p = addressProblem(address, prefix);
    if (p !== undefined) throw authzErrors.invalidAddress.wrap(`invalid ${what} address: ${p}`);
  };
  const readGrant = (ctx: ExecContext | QueryContext, granter: string, grantee: string, url: string) => {
    const raw = ctx.store(AUTHZ).get(grantKey(granter, grantee, url));
    return raw === undefined ? undefined : MsgGrant.decode(raw).grant;
  };

  const grant: MsgHandler<MsgGrant> = {
    typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
    responseTypeUrl: "/cosmos.authz.v1beta1.MsgGrantResponse",
    decode: (b) => MsgGrant.decode(b),
    signers: (m) => [m.granter],
    validateBasic(m) {
      checkAddr("granter", m.granter);
      checkAddr("grantee", m.grantee);
      if (m.granter === m.grantee) throw authzErrors.granteeIsGranter.error();
      const auth = m.grant?.authorization;
      if (auth === undefined) throw authzErrors.invalidRequest.wrap("authorization is nil");
      if (auth.typeUrl !== GENERIC_URL) throw authzErrors.unknownAuthorization.wrap(auth.typeUrl);
      if (GenericAuthorization.decode(auth.value).msg === "")
        throw authzErrors.invalidRequest.wrap("msg type url is empty");
    },
    execute(ctx, m) {
      const url = GenericAuthorization.decode(m.grant!.authorization!.value).msg;
      const exp = m.grant?.expiration;
      if (exp !== undefined && !live(m.grant!, ctx))
        throw authzErrors.invalidExpiration.wrap(`${exp.seconds}`);
      const store = ctx.store(AUTHZ);
      // Stored as the MsgGrant itself: granter, grantee and the grant in one value.
      store.set(grantKey(m.granter, m.grantee, url), MsgGrant.encode(m).finish());
      store.set(granteeKey(m.grantee, m.granter, url), EMPTY);
      ctx.emit({
        type: "cosmos.authz.v1beta1.EventGrant",
        attributes: jsonAttrs({ msg_type_url: url, granter: m.granter, grantee: m.grantee }),
      });
      return MsgGrantResponse.encode({}).finish();
    },
  };

  const revoke: MsgHandler<MsgRevoke> = {
    typeUrl: "/cosmos.authz.v1beta1.MsgRevoke",
    responseTypeUrl: "/cosmos.authz.v1beta1.MsgRevokeResponse",
    decode: (b) => MsgRevoke.decode(b),
    signers: (m) => [m.granter],
    validateBasic(m) {
      checkAddr("granter", m.granter);
      checkAddr("grantee", m.grantee);
      if (m.granter === m.grantee) throw authzErrors.granteeIsGranter.error();
      if (m.msgTypeUrl === "") throw authzErrors.invalidRequest.wrap("missing msg method name");
    },
    execute(ctx, m) {
      if (readGrant(ctx, m.granter, m.grantee, m.msgTypeUrl) === undefined)
        throw authzErrors.notFound.wrap(`failed to delete grant with key ${m.msgTypeUrl}`);
      ctx.store(AUTHZ).delete(grantKey(m.granter, m.grantee, m.msgTypeUrl));
      ctx.store(AUTHZ).delete(granteeKey(m.grantee, m.granter, m.msgTypeUrl));
      ctx.emit({
        type: "cosmos.authz.v1beta1.EventRevoke",
        attributes: jsonAttrs({ msg_type_url: m.msgTypeUrl, granter: m.granter, grantee: m.grantee }),
      });
      return MsgRevokeResponse.encode({}).finish();
    },
  };

  const exec: MsgHandler<MsgExec> = {
    typeUrl: "/cosmos.authz.v1beta1.MsgExec",
    responseTypeUrl: "/cosmos.authz.v1beta1.MsgExecResponse",
    decode: (b) => MsgExec.decode(b),
    signers: (m) => [m.grantee],
    validateBasic(m) {
      checkAddr("grantee", m.grantee);
      if (m.msgs.length === 0) throw authzErrors.invalidRequest.wrap("messages cannot be empty");
    },
    execute(ctx, m) {
      const results: Uint8Array[] = [];
      for (const [index, inner] of m.msgs.entries()) {
        const signers = ctx.signersOf(inner);
        if (signers.length !== 1) throw authzErrors.numSigners.error();
        const granter = signers[0]!;
        if (granter !== m.grantee) {
          const g = readGrant(ctx, granter, m.grantee, inner.typeUrl);
          if (g === undefined || !live(g, ctx))
            throw authzErrors.notFound.wrap(
              `failed to get grant with given granter: ${granter}, grantee: ${m.grantee} & msgType: ${inner.typeUrl} `,
            );
        }
        const { response, events } = ctx.dispatch(inner);
        // SDK ≥ 0.46: every event of the i-th inner message carries authz_msg_index=i.
        for (const e of events)
          ctx.emit({
            type: e.type,
            attributes: [...e.attributes, { key: "authz_msg_index", value: `${index}` }],
          });
        results.push(response.value);
      }
      return MsgExecResponse.encode({ results }).finish();
    },
  };

  function listGrants(ctx: QueryContext, prefixKey: string, req: PageRequest | undefined, flip: boolean) {
    return paginate(ctx.store(AUTHZ), prefixKey, req, (suffix) => {
      const [a, ...rest] = suffix.split("/");
      const url = rest.join("/");
      const [granter, grantee] = flip ? [a!, prefixKey.split("/")[1]!] : [prefixKey.split("/")[1]!, a!];
      const g = readGrant(ctx, granter, grantee, url);
      if (g === undefined || !live(g, ctx)) return undefined;
      return GrantAuthorization.fromPartial({
        granter,
        grantee,
        authorization: g.authorization,
        expiration: g.expiration,
      });
    });
  }

  const Q = "/cosmos.authz.v1beta1.Query/";
  return {
    name: AUTHZ,
    messages: [grant, revoke, exec] as MsgHandler<unknown>[],
    queries: {
      [`${Q}Grants`](ctx, bytes) {
        const req = QueryGrantsRequest.decode(bytes);
        for (const [what, a] of [
          ["granter", req.granter],
          ["grantee", req.grantee],
        ] as const) {
          const p = addressProblem(a, prefix);
          if (p !== undefined) throw grpcError("InvalidArgument", `invalid ${what} address: ${p}`);
        }
        if (req.msgTypeUrl !== "") {
          const g = readGrant(ctx, req.granter, req.grantee, req.msgTypeUrl);
          if (g === undefined || !live(g, ctx))
            throw grpcError("NotFound", `authorization not found for ${req.msgTypeUrl} type`);
          return QueryGrantsResponse.encode({ grants: [g], pagination: undefined }).finish();
        }
        const page = paginate(ctx.store(AUTHZ), grantKey(req.granter, req.grantee), req.pagination, (url) => {
          const g = readGrant(ctx, req.granter, req.grantee, url);
          return g !== undefined && live(g, ctx) ? g : undefined;
        });
        return QueryGrantsResponse.encode({ grants: page.items, pagination: page.pagination }).finish();
      },
      [`${Q}GranterGrants`](ctx, bytes) {
        const req = QueryGranterGrantsRequest.decode(bytes);
        const p = addressProblem(req.granter, prefix);
        if (p !== undefined) throw grpcError("InvalidArgument", `invalid granter address: ${p}`);
        const page = listGrants(ctx, `g/${req.granter}/`, req.pagination, false);
        return QueryGranterGrantsResponse.encode({
          grants: page.items,
          pagination: page.pagination,
        }).finish();
      },
      [`${Q}GranteeGrants`](ctx, bytes) {
        const req = QueryGranteeGrantsRequest.decode(bytes);
        const p = addressProblem(req.grantee, prefix);
        if (p !== undefined) throw grpcError("InvalidArgument", `invalid grantee address: ${p}`);
        const page = listGrants(ctx, `ge/${req.grantee}/`, req.pagination, true);
        return QueryGranteeGrantsResponse.encode({
          grants: page.items,
          pagination: page.pagination,
        }).finish();
      },
    },
  };
}
