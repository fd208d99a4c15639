#!/bin/sh
# Builds the mcip-router image from the Dockerfile, smoke-runs it the way the Helm chart runs
# it (uid 10001, read-only root filesystem, no capabilities) and, with PUSH=1, pushes it.
# Run from the repository root: `npm run image`, with these environment variables:
#   IMAGE      repository to tag and push, e.g. registry.example.com/team/mcip-router
#              (default: mcip-router, a local name nobody can pull)
#   TAG        image tag (default: the version in package.json, the chart's appVersion)
#   PLATFORMS  e.g. linux/amd64,linux/arm64: one multi-arch image built with docker buildx,
#              which must be pushed (PUSH=1) because a multi-arch image cannot be loaded into the
#              local image store; the smoke run then pulls this machine's variant.
#              Default: this machine's platform, built with docker build.
#   PUSH       1 to push IMAGE:TAG
# Needs a Docker engine (docker buildx for PLATFORMS).
set -eu
IMAGE=${IMAGE:-mcip-router}
TAG=${TAG:-$(node -p 'require("./package.json").version')}
PLATFORMS=${PLATFORMS:-}
PUSH=${PUSH:-0}
ref="$IMAGE:$TAG"
# The smoke runs' image: the local build, or for a multi-arch build (pushed, never loaded) this
# machine's variant pulled from the registry, even when an older local image has the same tag.
pull=''
# The source revision the image reports (--version, /debug/build, mcip_build_info).
revision="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

if [ -n "$PLATFORMS" ]; then
  if [ "$PUSH" != 1 ]; then
    echo "image.sh: PLATFORMS=$PLATFORMS builds a multi-arch image, which must be pushed: set PUSH=1 and IMAGE to your registry" >&2
    exit 2
  fi
  docker buildx build --platform "$PLATFORMS" --build-arg REVISION="$revision" --tag "$ref" --push .
  pull='--pull always'
else
  docker build --build-arg REVISION="$revision" --tag "$ref" .
fi

# Smoke run 1: --check of the bundled example config (loads the config and every manifest,
# builds the routing table, exits 0), as uid 10001 on a read-only root filesystem.
run_locked() {
  # shellcheck disable=SC2086 # $pull is empty or two words
  docker run $pull --rm --read-only --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges \
    --tmpfs /tmp --volume "$PWD/examples:/examples:ro" "$@"
}
run_locked "$ref" --check --config /examples/router.yaml >/dev/null

# Smoke run 2: the router itself on the same config, until its admin server answers /healthz
# (the protos and every runtime dependency are then loaded).
container=$(run_locked --detach "$ref" --config /examples/router.yaml)
trap 'docker rm --force "$container" >/dev/null 2>&1 || true' EXIT
healthy=0
for _ in $(seq 1 30); do
  if docker exec "$container" node -e \
    "fetch('http://127.0.0.1:9901/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then
    healthy=1
    break
  fi
  sleep 1
done
if [ "$healthy" != 1 ]; then
  docker logs "$container" >&2 || true
  echo "image.sh: $ref did not answer /healthz within 30 s" >&2
  exit 1
fi
docker rm --force "$container" >/dev/null
trap - EXIT
echo "image.sh: $ref passed its smoke runs"

if [ "$PUSH" = 1 ] && [ -z "$PLATFORMS" ]; then
  docker push "$ref"
fi
