# mcip-router image: `node dist/src/main.js`, configured with --config FILE (the Helm chart
# mounts /etc/mcip-router/router.yaml). Build from the repository root:
#   docker build -t mcip-router:$(node -p 'require("./package.json").version') --build-arg REVISION=$(git rev-parse --short HEAD) .

# Build: install everything from the lockfile, compile, then drop the dev dependencies.
FROM node:26-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: none of the runtime dependencies needs one.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts

# Runtime: the compiled router, its production dependencies and the protos it loads at start.
FROM node:26-slim
ENV NODE_ENV=production
# V8's young generation capped at 8 MiB semi-spaces: ~15% less RSS with 1,000 open streams on
# Node 26 and no CPU cost measurable on the quiet benchmark (bench/README.md). The benchmark runs
# its routers with this same line; override it with the pod's own NODE_OPTIONS.
ENV NODE_OPTIONS="--max-semi-space-size=8"
# The source revision, shown by --version, /debug/build, the startup log and mcip_build_info.
ARG REVISION=unknown
ENV MCIP_ROUTER_REVISION=$REVISION
WORKDIR /app
# A fixed non-root uid/gid (the chart's podSecurityContext runs as 10001:10001).
RUN groupadd --system --gid 10001 mcip \
 && useradd --system --uid 10001 --gid mcip --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin mcip
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY protos ./protos
USER 10001:10001
# ext_proc (loopback by default) and the admin server (/healthz, /readyz, /metrics).
EXPOSE 9002 9901
ENTRYPOINT ["node", "dist/src/main.js"]
