/**
 * ADR-036 "sign arbitrary data": the data is wrapped in a legacy amino StdSignDoc with
 * fixed empty chain id, fee, memo and zero numbers. The bytes below are the compact JSON
 * with keys in sorted order, exactly what Keplr and cosmjs sign.
 */
export function adr036SignDoc(signer: string, data: Uint8Array | string): string {
  const b64 = Buffer.from(typeof data === "string" ? Buffer.from(data, "utf8") : data).toString("base64");
  // signer is bech32 and data is base64: neither needs JSON escaping beyond quotes.
  return (
    '{"account_number":"0","chain_id":"","fee":{"amount":[],"gas":"0"},"memo":"",' +
    `"msgs":[{"type":"sign/MsgSignData","value":{"data":"${b64}","signer":${JSON.stringify(signer)}}}],"sequence":"0"}`
  );
}
