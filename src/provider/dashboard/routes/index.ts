import type { FastifyInstance } from "fastify";
import type { DashboardContext } from "../context.ts";
import { fleet } from "./fleet.ts";
import { leaseDetail } from "./lease.ts";
import { leaseList, parseLeaseQuery } from "./leases.ts";
import { overview } from "./overview.ts";
import { parseWindow, series } from "./series.ts";

/** The dashboard's read API (docs/providerd.md "Operator dashboard"; every route GET). */
export function registerApiRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  app.get("/api/overview", async () => overview(ctx));
  app.get("/api/fleet", async () => fleet(ctx));
  app.get("/api/leases", async (req) => leaseList(ctx, parseLeaseQuery(req.query, ctx)));
  app.get<{ Params: { uuid: string } }>("/api/leases/:uuid", async (req) =>
    leaseDetail(ctx, req.params.uuid),
  );
  app.get("/api/series", async (req) => series(ctx, parseWindow(req.query)));
}
