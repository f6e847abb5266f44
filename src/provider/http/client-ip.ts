import { BlockList, isIP } from "node:net";
import type { FastifyRequest } from "fastify";

/**
 * The client address rate limits key on. A request from an address inside
 * `trusted_proxies` speaks for its client through `X-Forwarded-For`: the client is the
 * rightmost hop that is not itself a trusted proxy (hops left of it could be forged by the
 * client). From anywhere else the header is ignored and the socket's address is used.
 */
export class ClientIp {
  readonly #trusted: BlockList | undefined;

  constructor(trustedProxies: readonly string[]) {
    if (trustedProxies.length === 0) return;
    this.#trusted = new BlockList();
    for (const cidr of trustedProxies) {
      const [net = "", bits = ""] = cidr.split("/");
      const family = isIP(net) === 6 ? "ipv6" : "ipv4";
      this.#trusted.addSubnet(net, Number(bits), family);
    }
  }

  #isTrusted(ip: string): boolean {
    // Without trusted proxies (the default) no address is parsed at all: this runs per request.
    if (this.#trusted === undefined) return false;
    const family = isIP(ip);
    if (family === 0) return false;
    return this.#trusted.check(ip, family === 6 ? "ipv6" : "ipv4");
  }

  of(req: FastifyRequest): string {
    const peer = normalize(req.socket.remoteAddress ?? "");
    if (!this.#isTrusted(peer)) return peer;
    const header = req.headers["x-forwarded-for"];
    const hops = (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((h) => normalize(h.trim()))
      .filter((h) => h !== "");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return peer;
      if (!this.#isTrusted(hop)) return hop;
    }
    return hops[0] ?? peer;
  }
}

/** `::ffff:10.0.0.1` → `10.0.0.1`, so one client has one key whichever way it arrived. */
function normalize(ip: string): string {
  return ip.startsWith("::ffff:") && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}
