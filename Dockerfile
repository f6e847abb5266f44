# Fred's container image: one image for `fred providerd`, `fred backend docker` and a
# `fred up` trial. It is made from the npm package, so the image runs exactly what the
# release tarball holds:
#
#   npm pack                                  # fred-<version>.tgz here (the build context)
#   docker build -t fred:<version> .
#   docker run --rm fred:<version> --version
#
# The base is the official Node image. Where no registry is reachable (CI),
# scripts/base-image.sh makes an image of that exact name from Debian's packages first.
# Written for the classic builder as well as BuildKit (no BuildKit-only syntax).
ARG NODE_VERSION=24.22.3

# --- build: install the package with its production dependencies -----------------------
# (its npm-shrinkwrap.json pins them; the sources of the native module are dropped after)
FROM node:${NODE_VERSION}-bookworm-slim AS build
# Lets scripts/release.sh remove this stage's leftover image (the classic builder keeps it).
LABEL fred.stage=build
# better-sqlite3 is compiled from source by node-gyp: the toolchain stays in this stage.
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
# node-gyp takes the headers the Node build ships in /usr/local/include/node, so nothing is
# downloaded from nodejs.org.
ENV npm_config_nodedir=/usr/local
# The healthcheck is listed first so that COPY succeeds without a tarball and the check
# below can say what is missing.
COPY deploy/container/healthcheck.mjs fred-*.tgz /tmp/context/
RUN set -- /tmp/context/fred-*.tgz \
  && if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then \
       echo "the build context must hold exactly one fred-<version>.tgz: run 'npm pack' first" >&2; exit 1; \
     fi \
  && npm install --global --prefix /opt/fred --no-audit --no-fund --no-update-notifier "$1" \
  && npm cache clean --force \
  && /opt/fred/bin/fred --version \
  && cd /opt/fred/lib/node_modules/fred/node_modules/better-sqlite3 \
  && rm -rf deps src build/deps build/Release/obj.target build/Release/.deps build/Release/test_extension.node

# --- runtime: Node, tini, the package; no compiler, no npm cache --------------------------
FROM node:${NODE_VERSION}-bookworm-slim
LABEL fred.stage=runtime \
  org.opencontainers.image.title="fred" \
  org.opencontainers.image.description="Fred: provider daemon for the Manifest Network (providerd, Docker backend, fred up)" \
  org.opencontainers.image.licenses="Apache-2.0" \
  org.opencontainers.image.documentation="/opt/fred/lib/node_modules/fred/docs/operator-guide.md"
# tini reaps zombies and forwards signals, so Ctrl-C and `docker stop` reach fred as SIGTERM.
# btrfs-progs: `fred backend docker` makes a subvolume and a quota group per tenant volume.
# nftables: `fred backend docker` loads its tenant egress rules with nft (host network, CAP_NET_ADMIN).
# openssl: `fred up` makes its local CA and providerd's certificate with the openssl CLI.
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini btrfs-progs nftables openssl \
  && apt-get clean && rm -rf /var/lib/apt/lists/*
# A fixed uid/gid so volumes keep their owner across image versions.
RUN groupadd --system --gid 10001 fred \
  && useradd --system --uid 10001 --gid fred --home-dir /var/lib/fred --shell /usr/sbin/nologin fred \
  && install -d -o fred -g fred -m 0700 /var/lib/fred /var/cache/fred \
  && install -d -o root -g fred -m 0750 /etc/fred
COPY --from=build /opt/fred /opt/fred
COPY --from=build /tmp/context/healthcheck.mjs /opt/fred/healthcheck.mjs
ENV PATH=/opt/fred/bin:$PATH
# The daemons' V8 young generation, as the systemd units set it (docs/benchmarks.md).
ENV NODE_OPTIONS=--max-semi-space-size=16
# V8's bytecode of fred's modules, kept between starts of the container, as the systemd units
# keep it: a faster start (a new container starts without it).
ENV NODE_COMPILE_CACHE=/var/cache/fred/node-compile-cache
# State (stores, keyring, journals, a trial's ./.fred) lives in the volume; the configuration
# is mounted read-only at /etc/fred.
VOLUME ["/var/lib/fred"]
WORKDIR /var/lib/fred
USER fred
# providerd's API (and a trial's); a Docker backend listens where its configuration says.
EXPOSE 8080
# GET /health must answer 200: providerd's (and a trial's) on port 8080, https or http, by
# default; a backend container sets FRED_HEALTH_URL to its own listener (deploy/compose.yaml).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/opt/fred/healthcheck.mjs"]
ENTRYPOINT ["tini", "--", "fred"]
CMD ["--help"]
