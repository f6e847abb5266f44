import type { FastifyServerOptions } from "fastify";

/**
 * Fastify's schema compilers for providerd's listeners, whose routes declare no JSON schema:
 * each parses its input with zod. A Fastify instance built with the default compilers loads
 * Ajv and fast-json-stringify (about 1 MB of module sources and code, held for the daemon's
 * life) whether or not a route has a schema. These stand in for them, and a route that does
 * declare a JSON schema fails when it is registered instead of going unchecked.
 */
export const NO_JSON_SCHEMAS: NonNullable<FastifyServerOptions["schemaController"]> = {
  compilersFactory: {
    buildValidator: () => () => refuse(),
    buildSerializer: () => () => refuse(),
  },
};

function refuse(): never {
  throw new Error("providerd's routes validate with zod: a JSON schema on a route is not compiled");
}
