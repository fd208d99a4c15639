#!/bin/sh
# Every step of docs/two-clusters.md, in order. Contexts: cluster-a (imports, routes, runs the
# export controller) and cluster-b (exports). Run from the repository root.
set -eu
A=${A:-cluster-a}
B=${B:-cluster-b}

# 1. CRDs in both members (GIE's InferencePool CRD and Gateway API are assumed installed).
kubectl --context "$A" apply -f deploy/crds/inferencepoolimports.yaml
kubectl --context "$B" apply -f deploy/crds/inferencepoolimports.yaml

# 2. cluster-b: its pool (exported) and EPP Service; RBAC for cluster-a's routers (read) and
#    for cluster-a's export controller (write).
kubectl --context "$B" create namespace inference --dry-run=client -o yaml | kubectl --context "$B" apply -f -
kubectl --context "$B" create namespace mcip-system --dry-run=client -o yaml | kubectl --context "$B" apply -f -
kubectl --context "$B" apply -f examples/two-clusters/cluster-b/llm-pool.yaml
kubectl --context "$B" apply -f deploy/rbac/remote.yaml
kubectl --context "$B" apply -f deploy/rbac/export-member.yaml

# 3. cluster-a: its pool, Gateway and the 50/50 HTTPRoute; the kubeconfig Secrets for cluster-b.
kubectl --context "$A" create namespace inference --dry-run=client -o yaml | kubectl --context "$A" apply -f -
kubectl --context "$A" create namespace mcip-system --dry-run=client -o yaml | kubectl --context "$A" apply -f -
kubectl --context "$A" apply -f examples/two-clusters/cluster-a/llm-pool.yaml
kubectl --context "$A" apply -f examples/two-clusters/cluster-a/gateway.yaml
kubectl --context "$A" apply -f examples/two-clusters/cluster-a/httproute.yaml
A="$A" B="$B" sh examples/two-clusters/kubeconfig-secrets.sh

# 4. cluster-a: routers and export controller (the chart's RBAC covers cluster-a itself).
helm upgrade --install mcip charts/mcip-router -n mcip-system --kube-context "$A" \
  -f examples/two-clusters/helm/cluster-a-values.yaml

# 5. Verify (docs/two-clusters.md explains each answer).
kubectl --context "$A" -n inference get infpimp llm-pool -o yaml
kubectl --context "$B" -n inference get infpimp llm-pool -o yaml
kubectl --context "$B" -n inference get inferencepool llm-pool -o jsonpath='{.status.parents}'
