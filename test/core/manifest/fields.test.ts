import { describe, it } from "node:test";
import { entries, expectProblem, expectValid, flat } from "./helpers.ts";

/**
 * One passing and one failing case per field rule of fred-wire §3.2–3.3. Each row's good
 * fields must parse; its bad fields must produce a problem at `path` matching `message`.
 */
interface Rule {
  rule: string;
  good: Record<string, unknown>;
  bad: Record<string, unknown>;
  path: string;
  message: RegExp;
}

const ports = (value: Record<string, unknown>) => ({ ports: value });
const env = (value: Record<string, unknown>) => ({ env: value });
const labels = (value: Record<string, unknown>) => ({ labels: value });
const health = (value: Record<string, unknown>) => ({ health_check: { test: ["CMD", "true"], ...value } });

const RULES: Rule[] = [
  // image
  { rule: "image is required", good: {}, bad: { image: undefined }, path: "/image", message: /required/ },
  { rule: "image is non-empty", good: { image: "a" }, bad: { image: "" }, path: "/image", message: /empty/ },
  { rule: "image is a string", good: { image: "a" }, bad: { image: 7 }, path: "/image", message: /string/ },
  // ports
  {
    rule: "port key has a protocol",
    good: ports({ "80/tcp": {} }),
    bad: ports({ "80": {} }),
    path: "/ports/80",
    message: /<port>\/<tcp\|udp>/,
  },
  {
    rule: "port key has exactly two parts",
    good: ports({ "80/udp": {} }),
    bad: ports({ "80/tcp/x": {} }),
    path: "/ports/80~1tcp~1x",
    message: /<port>/,
  },
  {
    rule: "port protocol is tcp or udp, any case",
    good: ports({ "80/TCP": {}, "53/Udp": {} }),
    bad: ports({ "80/sctp": {} }),
    path: "/ports/80~1sctp",
    message: /<port>/,
  },
  {
    rule: "port is a number",
    good: ports({ "8080/tcp": {} }),
    bad: ports({ "http/tcp": {} }),
    path: "/ports/http~1tcp",
    message: /<port>/,
  },
  {
    rule: "port is at least 1",
    good: ports({ "1/tcp": {} }),
    bad: ports({ "0/tcp": {} }),
    path: "/ports/0~1tcp",
    message: /between 1 and 65535/,
  },
  {
    rule: "port is at most 65535",
    good: ports({ "65535/tcp": {} }),
    bad: ports({ "65536/tcp": {} }),
    path: "/ports/65536~1tcp",
    message: /between 1 and 65535/,
  },
  {
    rule: "a port is declared once",
    good: ports({ "80/tcp": {}, "80/udp": {} }),
    bad: ports({ "80/tcp": {}, "80/TCP": {} }),
    path: "/ports/80~1TCP",
    message: /already declared/,
  },
  {
    rule: "host_port may be 0",
    good: ports({ "80/tcp": { host_port: 0 } }),
    bad: ports({ "80/tcp": { host_port: -1 } }),
    path: "/ports/80~1tcp/host_port",
    message: /between 0 and 65535/,
  },
  {
    rule: "host_port is at most 65535",
    good: ports({ "80/tcp": {} }),
    bad: ports({ "80/tcp": { host_port: 65536 } }),
    path: "/ports/80~1tcp/host_port",
    message: /between 0 and 65535/,
  },
  {
    rule: "host_port is an integer",
    good: ports({ "80/tcp": {} }),
    bad: ports({ "80/tcp": { host_port: "80" } }),
    path: "/ports/80~1tcp/host_port",
    message: /integer/,
  },
  {
    rule: "a fixed host_port is refused at admission",
    good: ports({ "80/tcp": { host_port: 0 } }),
    bad: ports({ "80/tcp": { host_port: 8080 } }),
    path: "/ports/80~1tcp/host_port",
    message: /fixed host_port is not permitted/,
  },
  {
    rule: "ingress is a boolean",
    good: ports({ "80/tcp": { ingress: false } }),
    bad: ports({ "80/tcp": { ingress: "yes" } }),
    path: "/ports/80~1tcp/ingress",
    message: /true or false/,
  },
  {
    rule: "ingress only on TCP",
    good: ports({ "8080/TCP": { ingress: true }, "53/udp": {} }),
    bad: ports({ "53/udp": { ingress: true } }),
    path: "/ports/53~1udp/ingress",
    message: /TCP/,
  },
  {
    rule: "at most one ingress port",
    good: ports({ "80/tcp": { ingress: true }, "81/tcp": { ingress: false } }),
    bad: ports({ "80/tcp": { ingress: true }, "81/tcp": { ingress: true } }),
    path: "/ports",
    message: /at most one port/,
  },
  {
    rule: "port options are known",
    good: ports({ "80/tcp": { ingress: true } }),
    bad: ports({ "80/tcp": { protocol: "tcp" } }),
    path: "/ports/80~1tcp/protocol",
    message: /unknown field "protocol"/,
  },
  {
    rule: "at most 64 ports",
    good: ports(entries(64, (i) => `${i + 1}/tcp`, {})),
    bad: ports(entries(65, (i) => `${i + 1}/tcp`, {})),
    path: "/ports",
    message: /at most 64 ports/,
  },
  // env
  {
    rule: "env values are strings",
    good: env({ A: "1" }),
    bad: env({ A: 1 }),
    path: "/env/A",
    message: /string/,
  },
  {
    rule: "env names are non-empty",
    good: env({ A: "" }),
    bad: env({ "": "x" }),
    path: "/env/",
    message: /empty/,
  },
  {
    rule: "env names have no '='",
    good: env({ A_B: "x=y" }),
    bad: env({ "A=B": "x" }),
    path: "/env/A=B",
    message: /'='/,
  },
  {
    rule: "env names have no NUL",
    good: env({ AB: "x" }),
    bad: env({ "A\u0000B": "x" }),
    path: "/env/A\u0000B",
    message: /NUL/,
  },
  {
    rule: "PATH is blocked exactly, any case",
    good: env({ PATHS: "x", MY_PATH: "y" }),
    bad: env({ Path: "/x" }),
    path: "/env/Path",
    message: /PATH/,
  },
  {
    rule: "LD_ prefix is blocked, any case",
    good: env({ LDX: "x", OLD_LD_X: "y" }),
    bad: env({ ld_preload: "x" }),
    path: "/env/ld_preload",
    message: /LD_/,
  },
  {
    rule: "FRED_ prefix is blocked, any case",
    good: env({ FREDDY: "x" }),
    bad: env({ Fred_Token: "x" }),
    path: "/env/Fred_Token",
    message: /FRED_/,
  },
  {
    rule: "DOCKER_ prefix is blocked, any case",
    good: env({ DOCKERFILE: "x" }),
    bad: env({ docker_host: "x" }),
    path: "/env/docker_host",
    message: /DOCKER_/,
  },
  {
    rule: "at most 256 env variables",
    good: env(entries(256, (i) => `V${i}`, "x")),
    bad: env(entries(257, (i) => `V${i}`, "x")),
    path: "/env",
    message: /at most 256/,
  },
  // command and args
  {
    rule: "command is a string array",
    good: { command: ["/bin/sh", "-c"] },
    bad: { command: "ls -l" },
    path: "/command",
    message: /array/,
  },
  {
    rule: "args are strings",
    good: { args: ["-v"] },
    bad: { args: [1] },
    path: "/args/0",
    message: /string/,
  },
  // labels
  {
    rule: "label values are strings",
    good: labels({ team: "a" }),
    bad: labels({ team: true }),
    path: "/labels/team",
    message: /string/,
  },
  {
    rule: "fred. label prefix is reserved, any case",
    good: labels({ fredx: "1", "my.fred.x": "2" }),
    bad: labels({ "FRED.lease": "x" }),
    path: "/labels/FRED.lease",
    message: /fred\./,
  },
  {
    rule: "traefik. label prefix is reserved, any case",
    good: labels({ traefik: "1" }),
    bad: labels({ "Traefik.http.routers.x": "y" }),
    path: "/labels/Traefik.http.routers.x",
    message: /traefik\./,
  },
  {
    rule: "at most 128 labels",
    good: labels(entries(128, (i) => `l${i}`, "x")),
    bad: labels(entries(129, (i) => `l${i}`, "x")),
    path: "/labels",
    message: /at most 128/,
  },
  // health_check
  {
    rule: "health test is required",
    good: health({}),
    bad: { health_check: { retries: 1 } },
    path: "/health_check/test",
    message: /required/,
  },
  {
    rule: "health test is non-empty",
    good: health({ test: ["NONE"] }),
    bad: health({ test: [] }),
    path: "/health_check/test",
    message: /empty/,
  },
  {
    rule: "health test kind is CMD, CMD-SHELL or NONE",
    good: health({ test: ["CMD-SHELL", "curl -f localhost"] }),
    bad: health({ test: ["SHELL", "x"] }),
    path: "/health_check/test",
    message: /CMD/,
  },
  {
    rule: "CMD needs a command",
    good: health({ test: ["CMD", "pg_isready"] }),
    bad: health({ test: ["CMD"] }),
    path: "/health_check/test",
    message: /at least one more/,
  },
  {
    rule: "CMD-SHELL needs a command",
    good: health({ test: ["CMD-SHELL", "true"] }),
    bad: health({ test: ["CMD-SHELL"] }),
    path: "/health_check/test",
    message: /at least one more/,
  },
  {
    rule: "NONE stands alone",
    good: health({ test: ["NONE"] }),
    bad: health({ test: ["NONE", "x"] }),
    path: "/health_check/test",
    message: /only element/,
  },
  {
    rule: "health test is a string array",
    good: health({}),
    bad: health({ test: "CMD true" }),
    path: "/health_check/test",
    message: /array/,
  },
  {
    rule: "retries may be 0",
    good: health({ retries: 0 }),
    bad: health({ retries: -1 }),
    path: "/health_check/retries",
    message: /negative/,
  },
  {
    rule: "retries is an integer",
    good: health({ retries: 3 }),
    bad: health({ retries: 1.5 }),
    path: "/health_check/retries",
    message: /integer/,
  },
  {
    rule: "health_check fields are known",
    good: health({ interval: "5s" }),
    bad: health({ disable: true }),
    path: "/health_check/disable",
    message: /unknown field/,
  },
  // durations
  {
    rule: "durations accept Go syntax",
    good: health({ interval: "1m30s", timeout: "1.5s", start_period: ".5h" }),
    bad: health({ interval: "30" }),
    path: "/health_check/interval",
    message: /Go duration/,
  },
  {
    rule: "durations accept µs and us",
    good: health({ timeout: "1500µs", interval: "2000us" }),
    bad: health({ timeout: "1500 us" }),
    path: "/health_check/timeout",
    message: /Go duration/,
  },
  {
    rule: "durations accept integer nanoseconds",
    good: health({ timeout: 5_000_000_000 }),
    bad: health({ timeout: 1.5 }),
    path: "/health_check/timeout",
    message: /Go duration/,
  },
  {
    rule: "durations are a string or a number",
    good: health({ start_period: "0" }),
    bad: health({ start_period: true }),
    path: "/health_check/start_period",
    message: /Go duration/,
  },
  {
    rule: "health durations are not negative",
    good: health({ interval: 0 }),
    bad: health({ interval: "-5s" }),
    path: "/health_check/interval",
    message: /negative/,
  },
  {
    rule: "durations must fit exactly",
    good: health({ interval: "2400h" }),
    bad: health({ interval: "9999999999h" }),
    path: "/health_check/interval",
    message: /too large/,
  },
  // tmpfs
  {
    rule: "tmpfs paths are absolute",
    good: { tmpfs: ["/var/cache/nginx"] },
    bad: { tmpfs: ["var/cache"] },
    path: "/tmpfs/0",
    message: /absolute/,
  },
  {
    rule: "tmpfs is not /",
    good: { tmpfs: ["/data"] },
    bad: { tmpfs: ["/"] },
    path: "/tmpfs/0",
    message: /root/,
  },
  {
    rule: "tmpfs is not /tmp itself, but below is fine",
    good: { tmpfs: ["/tmp/cache"] },
    bad: { tmpfs: ["/tmp/"] },
    path: "/tmpfs/0",
    message: /\/tmp/,
  },
  {
    rule: "tmpfs is not /run itself, but below is fine",
    good: { tmpfs: ["/run/mysqld"] },
    bad: { tmpfs: ["/run"] },
    path: "/tmpfs/0",
    message: /\/run/,
  },
  {
    rule: "tmpfs is not on /proc",
    good: { tmpfs: ["/procs"] },
    bad: { tmpfs: ["/proc"] },
    path: "/tmpfs/0",
    message: /\/proc/,
  },
  {
    rule: "tmpfs is not under /sys",
    good: { tmpfs: ["/system"] },
    bad: { tmpfs: ["/sys/fs/cgroup"] },
    path: "/tmpfs/0",
    message: /\/sys/,
  },
  {
    rule: "tmpfs is not under /dev, even via ..",
    good: { tmpfs: ["/var/../srv"] },
    bad: { tmpfs: ["/var/../dev/shm"] },
    path: "/tmpfs/0",
    message: /\/dev/,
  },
  {
    rule: "tmpfs paths are unique after cleaning",
    good: { tmpfs: ["/a", "/b"] },
    bad: { tmpfs: ["/a", "//a/./"] },
    path: "/tmpfs/1",
    message: /duplicate/,
  },
  {
    rule: "at most 4 tmpfs mounts",
    good: { tmpfs: ["/a", "/b", "/c", "/d"] },
    bad: { tmpfs: ["/a", "/b", "/c", "/d", "/e"] },
    path: "/tmpfs",
    message: /at most 4/,
  },
  // user
  {
    rule: "user may be uid or name",
    good: { user: "1000" },
    bad: { user: "app user" },
    path: "/user",
    message: /whitespace/,
  },
  {
    rule: "user may be uid:gid (further colons are Go's business)",
    good: { user: "1000:1000", init: true },
    bad: { user: "1000:" },
    path: "/user",
    message: /uid:gid/,
  },
  {
    rule: "user part is non-empty",
    good: { user: "postgres:postgres" },
    bad: { user: ":1000" },
    path: "/user",
    message: /uid/,
  },
  {
    rule: "user has no tab or newline",
    good: { user: "a:b:c" },
    bad: { user: "app\n" },
    path: "/user",
    message: /whitespace/,
  },
  {
    rule: "empty user means the image default",
    good: { user: "" },
    bad: { user: 1000 },
    path: "/user",
    message: /string/,
  },
  // stop_grace_period
  {
    rule: "stop_grace_period is at least 1s",
    good: { stop_grace_period: "1s" },
    bad: { stop_grace_period: "999ms" },
    path: "/stop_grace_period",
    message: /between 1s and 120s/,
  },
  {
    rule: "stop_grace_period is at most 120s",
    good: { stop_grace_period: "2m" },
    bad: { stop_grace_period: "2m0.001s" },
    path: "/stop_grace_period",
    message: /between 1s and 120s/,
  },
  {
    rule: "stop_grace_period in nanoseconds",
    good: { stop_grace_period: 120_000_000_000 },
    bad: { stop_grace_period: 0 },
    path: "/stop_grace_period",
    message: /between 1s and 120s/,
  },
  {
    rule: "stop_grace_period is a duration",
    good: { stop_grace_period: "30s" },
    bad: { stop_grace_period: "30 seconds" },
    path: "/stop_grace_period",
    message: /Go duration/,
  },
  // init
  {
    rule: "init is a boolean",
    good: { init: false },
    bad: { init: "true" },
    path: "/init",
    message: /true or false/,
  },
  // expose
  {
    rule: "expose entries are port numbers",
    good: { expose: ["3000", "8080"] },
    bad: { expose: ["3000", "web"] },
    path: "/expose/1",
    message: /not a port number/,
  },
  {
    rule: "expose ports are 1-65535",
    good: { expose: ["65535"] },
    bad: { expose: ["0"] },
    path: "/expose/0",
    message: /between 1 and 65535/,
  },
  {
    rule: "expose entries are strings",
    good: { expose: ["80"] },
    bad: { expose: [80] },
    path: "/expose/0",
    message: /string/,
  },
  {
    rule: "expose entries are unique",
    good: { expose: ["80", "81"] },
    bad: { expose: ["80", "81", "80"] },
    path: "/expose/2",
    message: /duplicate/,
  },
  {
    rule: "at most 64 expose entries",
    good: { expose: Array.from({ length: 64 }, (_, i) => String(i + 1)) },
    bad: { expose: Array.from({ length: 65 }, (_, i) => String(i + 1)) },
    path: "/expose",
    message: /at most 64/,
  },
  // fields that do not exist
  {
    rule: "volumes is not a field",
    good: { init: true },
    bad: { volumes: ["/data"] },
    path: "/volumes",
    message: /unknown field "volumes"/,
  },
  {
    rule: "resources is not a field",
    good: {},
    bad: { resources: { cpu: 1 } },
    path: "/resources",
    message: /unknown field/,
  },
  {
    rule: "field names are case-sensitive",
    good: {},
    bad: { Image: "x" },
    path: "/Image",
    message: /unknown field/,
  },
];

describe("manifest field rules (flat documents)", () => {
  for (const row of RULES) {
    it(`${row.rule}: passes`, () => {
      expectValid(flat(row.good));
    });
    it(`${row.rule}: fails`, () => {
      expectProblem(flat(row.bad), row.path, row.message);
    });
  }
});

describe("manifest field rules inside a stack", () => {
  for (const row of RULES.filter((_, i) => i % 5 === 0)) {
    it(`${row.rule}: points below /services/<name>`, () => {
      const stack = { services: { web: flat(row.good), db: flat(row.bad) } };
      expectProblem(stack, `/services/db${row.path}`, row.message);
    });
  }
});
