import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { hmacSecret, verifyRequest } from "../../../src/auth/hmac.ts";
import { listenLoopback, until } from "../../support/index.ts";

/**
 * A recording callback receiver standing in for providerd's `/callbacks/provision`: it
 * verifies every signature, records each delivery, and applies each distinct effect
 * (callback id + lease + status) once, as providerd must with at-least-once delivery.
 */
export interface Delivery {
  uri: string;
  /** `operation_id` or `lifecycle_id` value from the query. */
  callbackId: string;
  route: "operation" | "lifecycle";
  body: Record<string, unknown>;
  signatureValid: boolean;
}

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Distinct effects in first-arrival order: `${route}:${lease}:${status}`. */
  effects: string[];
  /** Reply status for future requests (default 200); "hold" keeps requests open. */
  setMode(mode: number | "hold"): void;
  /** Number of requests currently held open. */
  held(): number;
  /** Completes held requests with `status`. */
  releaseHeld(status?: number): void;
  waitFor(predicate: (r: Receiver) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** `now` is the verifying time source (a backend on a ManualClock signs in its own time). */
export async function startReceiver(secret: string, now: () => number = Date.now): Promise<Receiver> {
  const key = hmacSecret(secret);
  let mode: number | "hold" = 200;
  const holding: ServerResponse[] = [];
  const receiver: Receiver = {
    url: "",
    deliveries: [],
    effects: [],
    setMode(m) {
      mode = m;
    },
    held: () => holding.length,
    releaseHeld(status = 200) {
      for (const res of holding.splice(0)) res.writeHead(status).end();
    },
    async waitFor(predicate, timeoutMs = 20_000) {
      await until(() => predicate(receiver), "the receiver's condition", {
        timeoutMs,
        intervalMs: 20,
        context: () => `receiver effects so far: ${receiver.effects.join(", ")}`,
      });
    },
    close: async () => {
      receiver.releaseHeld(503);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const uri = req.url ?? "";
      let signatureValid = true;
      try {
        verifyRequest({
          header: req.headers["x-fred-signature"] as string | undefined,
          method: req.method ?? "",
          uri,
          body: raw,
          nowMs: now(),
          secrets: [key],
        });
      } catch {
        signatureValid = false;
      }
      const query = new URL(uri, "http://x").searchParams;
      const op = query.get("operation_id");
      const route = op !== null ? "operation" : "lifecycle";
      const callbackId = op ?? query.get("lifecycle_id") ?? "";
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
      } catch {
        signatureValid = false;
      }
      receiver.deliveries.push({ uri, callbackId, route, body, signatureValid });
      if (!signatureValid) return void res.writeHead(401).end();
      // "hold" applies the effect, then never answers: the reply is lost in a crash.
      if (mode === "hold" || (mode >= 200 && mode < 300)) {
        const effect = `${route}:${String(body.lease_uuid)}:${String(body.status)}`;
        if (!receiver.effects.includes(effect)) receiver.effects.push(effect);
      }
      if (mode === "hold") return void holding.push(res);
      res.writeHead(mode).end();
    });
  });
  receiver.url = (await listenLoopback(server)).url;
  return receiver;
}
