import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type Docker from "dockerode";
import { pack } from "tar-stream";
import { FredError } from "../../core/errors.ts";

/**
 * The walkthrough's demo image, made here because no registry is reachable: a static
 * busybox (Debian's busybox-static) as the whole root file system, imported with the
 * engine's `import` call. It serves `/data/www` over HTTP on 8080 and keeps that folder on
 * its volume, so a page written before a close is still there after a restore. Imported
 * once per recipe: the image carries the recipe's hash as a label.
 */
export const DEMO_IMAGE = "fred-demo/notes:1";
const BUSYBOX = "/bin/busybox";
const RECIPE_LABEL = "fred.demo.recipe";

// Everything lives on the volume. First start only: the page and a random id (so a restore
// can show it got the same data back). Every start: a line in boots.txt and the manifest's
// DEMO_VERSION in version.txt (so an update shows). httpd -v logs each request.
// The shell stays PID 1 with a TERM trap: httpd as PID 1 has no TERM handler, so the
// kernel drops the signal and every stop, restart and update waited out the whole grace
// period (30 s) before the engine killed it.
const START = [
  // First, so a stop that comes while the page is set up is not dropped either.
  "trap 'kill $served 2>/dev/null; exit 0' TERM INT",
  "mkdir -p /data/www",
  '[ -f /data/www/index.html ] || echo "hello from fred" > /data/www/index.html',
  "[ -f /data/www/id.txt ] || cat /proc/sys/kernel/random/uuid > /data/www/id.txt",
  "date >> /data/www/boots.txt",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion inside the container, not JS
  'echo "${DEMO_VERSION:-v1}" > /data/www/version.txt',
  "httpd -f -v -p 8080 -h /data/www & served=$!",
  "wait $served",
].join("; ");

function busyboxApplets(): string[] {
  if (!existsSync(BUSYBOX))
    throw new FredError("ERR_USAGE", `fred up --docker needs ${BUSYBOX} (apt-get install busybox-static)`);
  const applets = execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" }).split("\n").filter(Boolean);
  if (!applets.includes("httpd"))
    throw new FredError("ERR_USAGE", `${BUSYBOX} has no httpd applet (install Debian's busybox-static)`);
  return applets.filter((a) => a !== "busybox" && /^[a-z0-9_.[-]+$/.test(a));
}

/** The rootfs as a tar stream: /bin/busybox, an applet link farm, passwd/group, /data. */
function rootfsTar(busybox: Buffer, applets: readonly string[]) {
  const tar = pack();
  for (const dir of ["bin", "etc", "tmp", "data", "proc", "sys", "dev", "run"])
    tar.entry({ name: dir, type: "directory", mode: dir === "tmp" ? 0o1777 : 0o755 });
  tar.entry({ name: "bin/busybox", mode: 0o755 }, busybox);
  for (const a of applets) tar.entry({ name: `bin/${a}`, type: "symlink", linkname: "busybox" });
  tar.entry({ name: "etc/passwd", mode: 0o644 }, "root:x:0:0:root:/root:/bin/sh\n");
  tar.entry({ name: "etc/group", mode: 0o644 }, "root:x:0:\n");
  tar.finalize();
  return tar;
}

/** Imports the demo image unless the engine already holds this recipe; returns its name. */
export async function ensureDemoImage(docker: Docker): Promise<string> {
  const applets = busyboxApplets();
  const busybox = readFileSync(BUSYBOX);
  const recipe = createHash("sha256")
    .update(busybox)
    .update(START)
    .update(applets.join(","))
    .digest("hex")
    .slice(0, 16);
  const existing = await docker
    .getImage(DEMO_IMAGE)
    .inspect()
    .catch(() => undefined);
  if (existing?.Config?.Labels?.[RECIPE_LABEL] === recipe) return DEMO_IMAGE;
  const [repo, tag] = DEMO_IMAGE.split(":") as [string, string];
  const stream = await docker.importImage(
    rootfsTar(busybox, applets) as unknown as NodeJS.ReadableStream,
    {
      repo,
      tag,
      changes: [
        `LABEL ${RECIPE_LABEL}=${recipe}`,
        "ENV PATH=/bin",
        "VOLUME /data",
        "EXPOSE 8080",
        `CMD ["/bin/sh", "-c", ${JSON.stringify(START)}]`,
      ],
    } as unknown as Parameters<Docker["importImage"]>[1],
  );
  await new Promise<void>((resolve, reject) => {
    stream.on("data", () => {});
    stream.on("end", () => resolve());
    stream.on("error", reject);
  });
  return DEMO_IMAGE;
}

/** The demo manifest the walkthrough deploys (its SHA-256 becomes the lease's meta_hash). */
export function demoManifest(image: string, version?: string): string {
  const app: Record<string, unknown> = { image, ports: { "8080/tcp": {} } };
  if (version !== undefined) app.env = { DEMO_VERSION: version };
  return `${JSON.stringify({ services: { app } }, null, 2)}\n`;
}
