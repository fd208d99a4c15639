#!/bin/sh
# Steps 2 to 7 of docs/two-clusters.md, in order, each followed by its check. Run from the
# repository root after step 1 (the image built and pushed):
#   IMAGE=registry.example.com/team/mcip-router sh examples/two-clusters/install.sh
# Contexts: cluster-a (imports, routes, runs the export controller) and cluster-b (exports);
# A=... B=... for other names. VERIFIED_EPP_TLS=1: verify the EPPs' certificates (cert-manager
# in both clusters) instead of accepting them unverified.
set -eu
A=${A:-cluster-a}
B=${B:-cluster-b}
IMAGE=${IMAGE:?set IMAGE to the mcip-router image you built and pushed (docs/two-clusters.md, step 1)}
VERIFIED_EPP_TLS=${VERIFIED_EPP_TLS:-0}

# Runs a command until it succeeds: $1 seconds at most, $2 between tries, $3 the error after
# that (docs/two-clusters.md, Troubleshooting, says what to check); the rest is the command.
retry() {
  limit=$1 step=$2 what=$3
  shift 3
  waited=0
  until "$@"; do
    if [ "$waited" -ge "$limit" ]; then
      echo "install.sh: $what (docs/two-clusters.md, Troubleshooting)" >&2
      exit 1
    fi
    sleep "$step"
    waited=$((waited + step))
  done
}

# 2. CRDs in both members: Gateway API, GIE's InferencePool, InferencePoolImport.
kubectl kustomize "github.com/kubernetes-sigs/gateway-api/config/crd?ref=v1.4.0" | kubectl --context "$A" apply --server-side -f -
kubectl kustomize "github.com/kubernetes-sigs/gateway-api-inference-extension/config/crd?ref=v1.1.0" | kubectl --context "$A" apply --server-side -f -
kubectl --context "$A" apply -f deploy/crds/inferencepoolimports.yaml
kubectl kustomize "github.com/kubernetes-sigs/gateway-api/config/crd?ref=v1.4.0" | kubectl --context "$B" apply --server-side -f -
kubectl kustomize "github.com/kubernetes-sigs/gateway-api-inference-extension/config/crd?ref=v1.1.0" | kubectl --context "$B" apply --server-side -f -
kubectl --context "$B" apply -f deploy/crds/inferencepoolimports.yaml
kubectl --context "$A" get crd gateways.gateway.networking.k8s.io httproutes.gateway.networking.k8s.io inferencepools.inference.networking.k8s.io inferencepoolimports.inference.networking.x-k8s.io
kubectl --context "$B" get crd gateways.gateway.networking.k8s.io httproutes.gateway.networking.k8s.io inferencepools.inference.networking.k8s.io inferencepoolimports.inference.networking.x-k8s.io

# 3. The pools: model servers, EPP and InferencePool in each cluster; cluster-b's exported, its
#    EPP on an internal load balancer.
kubectl --context "$A" create namespace inference --dry-run=client -o yaml | kubectl --context "$A" apply -f -
kubectl --context "$A" -n inference apply -f https://github.com/kubernetes-sigs/gateway-api-inference-extension/raw/v1.1.0/config/manifests/vllm/sim-deployment.yaml
kubectl --context "$A" apply -f examples/two-clusters/epp/epp.yaml
kubectl --context "$A" apply -f examples/two-clusters/cluster-a/llm-pool.yaml
kubectl --context "$B" create namespace inference --dry-run=client -o yaml | kubectl --context "$B" apply -f -
kubectl --context "$B" -n inference apply -f https://github.com/kubernetes-sigs/gateway-api-inference-extension/raw/v1.1.0/config/manifests/vllm/sim-deployment.yaml
kubectl --context "$B" apply -f examples/two-clusters/epp/epp.yaml
kubectl --context "$B" apply -f examples/two-clusters/cluster-b/llm-pool.yaml
kubectl --context "$A" -n inference rollout status deployment/vllm-llama3-8b-instruct --timeout=10m
kubectl --context "$A" -n inference rollout status deployment/llm-pool-epp --timeout=5m
kubectl --context "$B" -n inference rollout status deployment/vllm-llama3-8b-instruct --timeout=10m
kubectl --context "$B" -n inference rollout status deployment/llm-pool-epp --timeout=5m
lb_address() { [ -n "$(kubectl --context "$B" -n inference get service llm-pool-epp -o jsonpath='{.status.loadBalancer.ingress[0]}')" ]; }
retry 600 10 "cluster-b's Service inference/llm-pool-epp has no load-balancer address after 10 minutes" lb_address

# 4. cluster-b: read access for cluster-a's routers, write access for its export controller,
#    metrics-only access for the scrapes.
kubectl --context "$B" create namespace mcip-system --dry-run=client -o yaml | kubectl --context "$B" apply -f -
kubectl --context "$B" apply -f deploy/rbac/remote.yaml
kubectl --context "$B" apply -f deploy/rbac/export-member.yaml
kubectl --context "$B" apply -f deploy/rbac/metrics-reader.yaml
kubectl --context "$B" auth can-i list inferencepools.inference.networking.k8s.io --all-namespaces --as=system:serviceaccount:mcip-system:mcip-router-reader
kubectl --context "$B" auth can-i create inferencepoolimports.inference.networking.x-k8s.io -n inference --as=system:serviceaccount:mcip-system:mcip-export-member
kubectl --context "$B" auth can-i get /metrics --as=system:serviceaccount:mcip-system:mcip-metrics-reader

# 5. cluster-a: the Gateway, the 50/50 HTTPRoute, the credentials for cluster-b and its own metrics.
kubectl --context "$A" create namespace mcip-system --dry-run=client -o yaml | kubectl --context "$A" apply -f -
kubectl --context "$A" apply -f deploy/rbac/metrics-reader.yaml
kubectl --context "$A" apply -f examples/two-clusters/cluster-a/gateway.yaml
kubectl --context "$A" apply -f examples/two-clusters/cluster-a/httproute.yaml
A="$A" B="$B" sh examples/two-clusters/kubeconfig-secrets.sh
kubectl --context "$A" -n mcip-system get secret cluster-b-reader cluster-b-export cluster-b-metrics-token mcip-metrics-reader-token

# 6. cluster-a: routers and export controller (the chart's RBAC covers cluster-a itself).
if [ "$VERIFIED_EPP_TLS" = 1 ]; then
  kubectl --context "$A" apply -f examples/two-clusters/tls/epp-certificate.yaml
  kubectl --context "$B" apply -f examples/two-clusters/tls/epp-certificate.yaml
  kubectl --context "$A" -n inference wait certificate/llm-pool-epp-tls --for=condition=Ready --timeout=2m
  kubectl --context "$B" -n inference wait certificate/llm-pool-epp-tls --for=condition=Ready --timeout=2m
  kubectl --context "$A" -n inference patch deployment llm-pool-epp --patch-file examples/two-clusters/tls/epp-serve-certificate.yaml
  kubectl --context "$B" -n inference patch deployment llm-pool-epp --patch-file examples/two-clusters/tls/epp-serve-certificate.yaml
  kubectl --context "$A" -n inference get secret llm-pool-epp-tls -o jsonpath='{.data.ca\.crt}' | base64 -d > cluster-a-epp-ca.crt
  kubectl --context "$B" -n inference get secret llm-pool-epp-tls -o jsonpath='{.data.ca\.crt}' | base64 -d > cluster-b-epp-ca.crt
  kubectl --context "$A" -n mcip-system create secret generic cluster-a-epp-ca --from-file=ca.crt=cluster-a-epp-ca.crt --dry-run=client -o yaml | kubectl --context "$A" apply -f -
  kubectl --context "$A" -n mcip-system create secret generic cluster-b-epp-ca --from-file=ca.crt=cluster-b-epp-ca.crt --dry-run=client -o yaml | kubectl --context "$A" apply -f -
  helm upgrade --install mcip charts/mcip-router -n mcip-system --kube-context "$A" \
    -f examples/two-clusters/helm/cluster-a-values.yaml \
    -f examples/two-clusters/helm/verified-epp-tls-values.yaml --set image.repository="$IMAGE"
else
  helm upgrade --install mcip charts/mcip-router -n mcip-system --kube-context "$A" \
    -f examples/two-clusters/helm/cluster-a-values.yaml --set image.repository="$IMAGE"
fi
kubectl --context "$A" -n mcip-system rollout status deployment/mcip-mcip-router --timeout=5m
kubectl --context "$A" -n mcip-system rollout status deployment/mcip-mcip-router-export-controller --timeout=5m

# 7. Verify (docs/two-clusters.md explains each answer). The export controller creates the
#    imports within seconds of its start.
import_exists() { kubectl --context "$1" -n inference get infpimp llm-pool >/dev/null 2>&1; }
retry 120 5 "no InferencePoolImport inference/llm-pool in $A after 2 minutes: see /debug/exports" import_exists "$A"
retry 120 5 "no InferencePoolImport inference/llm-pool in $B after 2 minutes: see /debug/exports" import_exists "$B"
kubectl --context "$A" -n inference get infpimp llm-pool -o yaml
kubectl --context "$B" -n inference get infpimp llm-pool -o yaml
# The router's leader writes the GatewayClass, Gateway and HTTPRoute status; the route resolves
# once the import exists.
kubectl --context "$A" wait gatewayclass/mcip-envoy --for=condition=Accepted --timeout=2m
kubectl --context "$A" -n inference wait gateway/inference-gateway --for=condition=Programmed --timeout=2m
kubectl --context "$A" -n inference get gateway inference-gateway -o jsonpath='{.status.addresses[*].value}{"\n"}{range .status.listeners[*]}{.name}: {.attachedRoutes} attached{"\n"}{end}'
route_status() { kubectl --context "$A" -n inference get httproute llm-route -o jsonpath='{range .status.parents[?(@.controllerName=="mcip-router.dev/gateway-controller")].conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'; }
route_resolved() { case "$(route_status)" in *"Accepted=True"*"ResolvedRefs=True"*) ;; *) return 1 ;; esac; }
retry 120 5 "HTTPRoute inference/llm-route is not Accepted with ResolvedRefs True after 2 minutes: see its status.parents" route_resolved
route_status
kubectl --context "$B" -n inference get inferencepool llm-pool -o jsonpath='{.status.parents}'
