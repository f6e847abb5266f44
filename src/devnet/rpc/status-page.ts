/**
 * `GET /fred/devnet`: a page for a person poking at the devnet with a browser: the chain, the
 * dev accounts with their balances, and the latest blocks. It shows no secrets (mnemonics
 * and keys stay in `fred devnet keys`), escapes everything it prints, and forbids scripts
 * and framing, so it is safe to open next to other pages.
 */
import { QueryAllBalancesRequest, QueryAllBalancesResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import type { DevnetNode } from "../node.ts";

const RECENT_BLOCKS = 20;

export const STATUS_PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
};

export interface DevAccountRef {
  name: string;
  address: string;
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

function balances(node: DevnetNode, address: string): string {
  const r = node.app.query(
    "/cosmos.bank.v1beta1.Query/AllBalances",
    QueryAllBalancesRequest.encode({ address, resolveDenom: false }).finish(),
    node.queryBlock(),
  );
  if (r.code !== 0) return "";
  return QueryAllBalancesResponse.decode(r.value)
    .balances.map((c) => `${c.amount}${c.denom}`)
    .join(", ");
}

const table = (head: string[], rows: string[][]) =>
  `<table><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`)
    .join("")}</table>`;

export function statusPage(node: DevnetNode, rpcUrl: string, accounts: readonly DevAccountRef[]): string {
  const blocks: string[][] = [];
  for (
    let h = node.height;
    h >= Math.max(node.earliestHeight, node.height - RECENT_BLOCKS + 1) && h > 0;
    h--
  ) {
    const b = node.blockAt(h);
    if (b) blocks.push([String(h), b.block.header.time, String(b.num_txs), b.block_id.hash]);
  }
  const accountRows = accounts.map((a) => [a.name, a.address, balances(node, a.address)]);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fred devnet ${escapeHtml(node.chainId)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;font-family:monospace}</style></head>
<body><h1>fred devnet</h1>
<p>Chain <b>${escapeHtml(node.chainId)}</b> at height <b>${node.height}</b>${node.paused ? " (paused)" : ""};
CometBFT RPC ${escapeHtml(rpcUrl)}. Keys and mnemonics: <code>fred devnet keys --home &lt;dir&gt;</code>.</p>
<h2>Dev accounts</h2>${table(["name", "address", "balances"], accountRows)}
<h2>Latest blocks</h2>${table(["height", "time", "txs", "hash"], blocks)}
</body></html>
`;
}
