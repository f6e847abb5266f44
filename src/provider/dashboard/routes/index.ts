import type { FastifyInstance } from "fastify";
import type { DashboardContext } from "../context.ts";
import { fleet } from "./fleet.ts";
import { overview } from "./overview.ts";

/** The dashboard's read API (docs/providerd.md "Operator dashboard"; every route GET). */
export function registerApiRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  app.get("/api/overview", async () => overview(ctx));
  app.get("/api/fleet", async () => fleet(ctx));
}
