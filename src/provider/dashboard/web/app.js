// The operator dashboard's shell: token handling, hash routing, navigation and the
// 10-second auto-refresh (pausable). Pages live in their own modules; each reads the
// read API through api.js.
import { adoptTokenFromUrl, forgetToken, onUnauthorized, readToken, saveToken } from "./api.js";
import { ChartsPage } from "./charts.js";
import { FleetPage } from "./fleet.js";
import { html, render, useEffect, useRef, useState } from "./html.js";
import { LeasePage } from "./lease.js";
import { LeasesPage } from "./leases.js";
import { OverviewPage } from "./overview.js";
import { parseRoute } from "./route.js";

const REFRESH_MS = 10_000;

const PAGES = {
  overview: { title: "Overview", view: OverviewPage },
  fleet: { title: "Fleet", view: FleetPage },
  leases: { title: "Leases", view: LeasesPage },
  lease: { title: "Lease", view: LeasePage },
  charts: { title: "Charts", view: ChartsPage },
  notfound: { title: "Not found", view: NotFound },
};

const NAV = [
  ["#/", "Overview", ["overview"]],
  ["#/fleet", "Fleet", ["fleet"]],
  ["#/leases", "Leases", ["leases", "lease"]],
  ["#/charts", "Charts", ["charts"]],
];

function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onHash = () => {
      // A token pasted into the address bar of an open page is taken too.
      adoptTokenFromUrl();
      setRoute(parseRoute(location.hash));
    };
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  return route;
}

/** A counter that moves every REFRESH_MS while on and the tab is visible. */
function useRefresh() {
  const [auto, setAuto] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!auto) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") setTick((t) => t + 1);
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [auto]);
  return { auto, setAuto, tick, now: () => setTick((t) => t + 1) };
}

function App() {
  const [token, setToken] = useState(readToken);
  const route = useRoute();
  const refresh = useRefresh();
  const first = useRef(true);
  const page = PAGES[route.page];

  useEffect(() => onUnauthorized(() => setToken(undefined)), []);
  useEffect(() => {
    document.title = `${page.title} · Fred operator dashboard`;
    // After a navigation (not the first load), focus the new page's heading, so keyboard
    // and screen-reader users land on the content that changed.
    if (!first.current) document.getElementById("page-title")?.focus();
    first.current = false;
  }, [route]);

  return html`
    <a class="skip" href="#main-content" onClick=${skipToMain}>Skip to content</a>
    <header class="top">
      <p class="brand">Fred <span>operator dashboard</span></p>
      ${
        token !== undefined &&
        html`<nav aria-label="Dashboard">
          <ul>
            ${NAV.map(
              ([href, text, pages]) => html`<li key=${href}>
                <a href=${href} aria-current=${pages.includes(route.page) ? "page" : undefined}>${text}</a>
              </li>`,
            )}
          </ul>
        </nav>`
      }
      ${
        token !== undefined &&
        html`<${RefreshControls} refresh=${refresh} onForget=${() => {
          forgetToken();
          setToken(undefined);
        }} />`
      }
    </header>
    <main id="main-content" tabindex="-1">
      ${
        token === undefined
          ? html`<${TokenForm} onToken=${(t) => {
              saveToken(t);
              setToken(t);
            }} />`
          : html`<${page.view} key=${route.page} params=${route.params} tick=${refresh.tick} />`
      }
    </main>
  `;
}

function skipToMain(e) {
  // The hash is the router's: move focus instead of following the link.
  e.preventDefault();
  document.getElementById("main-content")?.focus();
}

function RefreshControls({ refresh, onForget }) {
  return html`<div class="controls">
    <button type="button" aria-pressed=${refresh.auto ? "true" : "false"} onClick=${() => refresh.setAuto(!refresh.auto)}>
      Auto-refresh ${refresh.auto ? "on" : "paused"}
    </button>
    <button type="button" onClick=${refresh.now}>Refresh now</button>
    <button type="button" class="secondary" onClick=${onForget}>Forget token</button>
  </div>`;
}

function TokenForm({ onToken }) {
  const [value, setValue] = useState("");
  const submit = (e) => {
    e.preventDefault();
    const t = value.trim();
    if (t !== "") onToken(t);
  };
  return html`<section class="token-form" aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Operator token needed</h1>
    <p>
      Open the dashboard URL that <code>fred up</code> prints (it carries the token), or paste the
      contents of the file named by <code>operator_token_file</code>. The token stays in this tab only.
    </p>
    <form onSubmit=${submit}>
      <label for="token-input">Operator token</label>
      <input id="token-input" type="password" autocomplete="off" spellcheck="false" value=${value} onInput=${(e) => setValue(e.currentTarget.value)} />
      <button type="submit">Open the dashboard</button>
    </form>
  </section>`;
}

function NotFound() {
  return html`<section aria-labelledby="page-title">
    <h1 id="page-title" tabindex="-1">Not found</h1>
    <p>This page does not exist. <a href="#/">Back to the overview</a>.</p>
  </section>`;
}

adoptTokenFromUrl();
render(html`<${App} />`, document.getElementById("app"));
