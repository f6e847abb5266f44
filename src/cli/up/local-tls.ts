import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { UP_TLS_DIR } from "../lease/index.ts";

/**
 * HTTPS for `fred up`'s providerd: a local CA made once under <home>/tls/ and a server
 * certificate it signs for 127.0.0.1 and localhost. The chain only accepts an https
 * api_url, so this is what lets the provider record point at the local providerd; tenant
 * tools trust the CA because it sits in the same home (`fred lease --home <home>/devnet`) or is named with
 * --ca-file / NODE_EXTRA_CA_CERTS. Made with the openssl CLI (every Debian and macOS has
 * it); without it fred up keeps plain http and says so. Keys are 0600 and never leave
 * the home.
 */
export interface LocalTls {
  caFile: string;
  certFile: string;
  keyFile: string;
}

const DAYS_CA = "3650";
const DAYS_SERVER = "825";

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
}

export function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The CA and server certificate of `home`, created on the first call (undefined without openssl). */
export function ensureLocalTls(home: string): LocalTls | undefined {
  const dir = resolve(home, UP_TLS_DIR);
  const files: LocalTls = {
    caFile: join(dir, "ca.pem"),
    certFile: join(dir, "server.pem"),
    keyFile: join(dir, "server-key.pem"),
  };
  const caKey = join(dir, "ca-key.pem");
  if ([files.caFile, caKey, files.certFile, files.keyFile].every((f) => existsSync(f))) return files;
  if (!hasOpenssl()) return undefined;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl([
    "req",
    "-x509",
    ...ec,
    "-keyout",
    caKey,
    "-out",
    files.caFile,
    "-days",
    DAYS_CA,
    "-subj",
    "/CN=fred up local CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE,pathlen:0",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  const csr = join(dir, "server.csr");
  openssl(["req", "-new", ...ec, "-keyout", files.keyFile, "-out", csr, "-subj", "/CN=localhost"]);
  const ext = join(dir, "server.ext");
  writeFileSync(
    ext,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
  );
  openssl([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    files.caFile,
    "-CAkey",
    caKey,
    "-set_serial",
    `0x${Date.now().toString(16)}`,
    "-days",
    DAYS_SERVER,
    "-extfile",
    ext,
    "-out",
    files.certFile,
  ]);
  rmSync(csr);
  rmSync(ext);
  for (const f of [files.caFile, caKey, files.certFile, files.keyFile]) chmodSync(f, 0o600);
  return files;
}
