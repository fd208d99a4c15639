# syntax=docker/dockerfile:1
# mcip-router image: `node dist/src/main.js`, configured with --config FILE (the Helm chart
# mounts /etc/mcip-router/router.yaml). Build, smoke-run and push it with scripts/image.sh:
#   npm run image                                           # this machine's platform, smoke-run
#   IMAGE=registry.example.com/team/mcip-router PLATFORMS=linux/amd64,linux/arm64 PUSH=1 npm run image
#
# Multi-arch: the build stage runs on the builder's own platform (BUILDPLATFORM) and produces
# only JavaScript (no runtime dependency has a native part or an install script it needs), so
# no step runs under emulation; the runtime stage is the node image of each TARGETPLATFORM
# with files copied in and nothing run.

# Build: install everything from the lockfile, compile, then drop the dev dependencies.
FROM --platform=$BUILDPLATFORM node:26-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: none of the runtime dependencies needs one.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts

# Runtime: the compiled router, its production dependencies and the protos it loads at start.
# Node 26 is the active LTS line; the files belong to root and are only read, so the
# container runs with a read-only root filesystem (the chart's readOnlyRootFilesystem).
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
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY protos ./protos
# A fixed numeric non-root uid/gid, the chart's podSecurityContext (10001:10001); it needs no
# passwd entry, so the runtime stage runs no command.
USER 10001:10001
# ext_proc (loopback by default) and the admin server (/healthz, /readyz, /metrics).
EXPOSE 9002 9901
ENTRYPOINT ["node", "dist/src/main.js"]
