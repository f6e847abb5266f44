// The operator dashboard as the package ships it (lib/dashboard/): the page's modules with
// preact, htm and uPlot bundled into one minified app.js, uPlot's CSS and ours in one
// styles.css, and index.html without the development block (the import map pointing at
// node_modules and uPlot's separate stylesheet). Nothing is fetched at run time.
// From source, providerd serves src/provider/dashboard/web/ as it is; see its index.html.
import { copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DASHBOARD_WEB = join(ROOT, "src", "provider", "dashboard", "web");

/** The development-only block of index.html, markers included. */
const DEV_BLOCK = /[ \t]*<!-- dev:[\s\S]*?<!-- \/dev -->\n?/;

/** index.html for the bundle: the same page without the development block. */
export function packagedIndexHtml(source) {
  if (!DEV_BLOCK.test(source)) throw new Error("index.html has no <!-- dev: … <!-- /dev --> block to remove");
  const html = source.replace(DEV_BLOCK, "");
  if (/importmap|\/assets\/vendor\//.test(html))
    throw new Error("index.html still names the import map or /assets/vendor/ outside its dev block");
  return html;
}

/** Writes index.html, app.js, styles.css and favicon.svg into `outdir`. */
export async function writeDashboard(outdir) {
  const { build } = await import("esbuild");
  const common = {
    bundle: true,
    minify: true,
    write: false,
    logLevel: "warning",
    // Browsers an operator's workstation runs (import maps, ES2022): no transpiling tricks.
    target: ["chrome111", "firefox115", "safari16.4"],
  };
  const js = await build({
    ...common,
    entryPoints: [join(DASHBOARD_WEB, "app.js")],
    outfile: join(outdir, "app.js"),
    format: "esm",
    platform: "browser",
    // Licence headers of preact and uPlot stay, at the end of the file.
    legalComments: "eof",
  });
  const css = await build({
    ...common,
    stdin: {
      contents: '@import "uplot/dist/uPlot.min.css";\n@import "./styles.css";\n',
      resolveDir: DASHBOARD_WEB,
      loader: "css",
    },
    outfile: join(outdir, "styles.css"),
  });
  mkdirSync(outdir, { recursive: true });
  const write = (name, data) => {
    const tmp = join(outdir, `.${name}.${process.pid}.tmp`);
    writeFileSync(tmp, data);
    renameSync(tmp, join(outdir, name));
  };
  write("app.js", one(js.outputFiles, "app.js").contents);
  write("styles.css", one(css.outputFiles, "styles.css").contents);
  copyFileSync(join(DASHBOARD_WEB, "favicon.svg"), join(outdir, "favicon.svg"));
  // The page last: whoever sees it finds every file it names.
  write("index.html", packagedIndexHtml(readFileSync(join(DASHBOARD_WEB, "index.html"), "utf8")));
}

function one(outputFiles, name) {
  const files = outputFiles.filter((f) => f.path.endsWith(name));
  if (files.length !== 1) throw new Error(`esbuild wrote ${files.length} ${name} files for the dashboard`);
  return files[0];
}
