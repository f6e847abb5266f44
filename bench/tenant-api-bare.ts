/**
 * The control beside `tenant-api`'s status figures: a bare Fastify app on 127.0.0.1 with
 * one route that runs the token's full check on every request (verifyTenantTokenUncached:
 * what providerd does for a token it has not seen) and answers a small JSON object,
 * nothing else (no hooks, no store, no chain). Its requests per CPU-second, against the
 * raw verify rate, is the ceiling any Fastify route that verifies every request reaches
 * on this machine at this moment.
 * Run by the bench as a child process; prints {"url": …} once listening, exits on SIGTERM.
 */
import Fastify from "fastify";
import { verifyTenantTokenUncached } from "../src/auth/token.ts";

const app = Fastify({ logger: false });
app.get("/v1/leases/:lease_uuid/status", async (req, reply) => {
  const header = req.headers.authorization ?? "";
  const claims = verifyTenantTokenUncached(header.slice(header.indexOf(" ") + 1), { nowMs: Date.now() });
  return reply.code(200).send({ lease_uuid: claims.leaseUuid, tenant: claims.tenant, state: "ok" });
});
const address = await app.listen({ host: "127.0.0.1", port: 0 });
console.log(JSON.stringify({ url: address }));
process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
