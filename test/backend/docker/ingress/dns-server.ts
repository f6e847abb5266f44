import { createSocket } from "node:dgram";
import type { AddressInfo } from "node:net";

/**
 * A tiny authoritative DNS server on 127.0.0.1 for the custom-domain gate (no public
 * resolver is reachable in CI): A queries for names in `records` get that address, every
 * other A or AAAA query gets an empty answer (NXDOMAIN for unknown names).
 */
export interface TestDns {
  /** "127.0.0.1:<port>", as `custom_domain_dns_resolvers` takes it. */
  address: string;
  records: Map<string, string>;
  queries: string[];
  close(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (i < msg.length && msg[i] !== 0) {
    const len = msg[i] as number;
    labels.push(msg.subarray(i + 1, i + 1 + len).toString("latin1"));
    i += len + 1;
  }
  return { name: labels.join(".").toLowerCase(), end: i + 1 };
}

export async function startDns(): Promise<TestDns> {
  const socket = createSocket("udp4");
  const records = new Map<string, string>();
  const queries: string[] = [];
  socket.on("message", (msg, peer) => {
    if (msg.length < 17) return;
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const question = msg.subarray(12, end + 4);
    queries.push(`${name}/${qtype}`);
    const address = records.get(name);
    const answer = qtype === 1 && address !== undefined;
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0);
    header.writeUInt16BE(address === undefined ? 0x8183 : 0x8180, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answer ? 1 : 0, 6);
    const parts = [header, question];
    if (answer) {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0);
      rr.writeUInt16BE(1, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(30, 6);
      rr.writeUInt16BE(4, 10);
      address.split(".").forEach((octet, k) => {
        rr[12 + k] = Number(octet);
      });
      parts.push(rr);
    }
    socket.send(Buffer.concat(parts), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    records,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
