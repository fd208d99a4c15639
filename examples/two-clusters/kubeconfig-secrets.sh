#!/bin/sh
# Builds cluster-a's two kubeconfig Secrets for cluster-b from the ServiceAccount token
# Secrets that deploy/rbac/remote.yaml and deploy/rbac/export-member.yaml create in cluster-b.
#   sh examples/two-clusters/kubeconfig-secrets.sh
# Contexts: cluster-a and cluster-b in your kubeconfig. The Secrets go to mcip-system.
set -eu
A=${A:-cluster-a}
B=${B:-cluster-b}
NS=mcip-system
server=$(kubectl config view --raw -o jsonpath="{.clusters[?(@.name==\"$(kubectl config view -o jsonpath="{.contexts[?(@.name==\"$B\")].context.cluster}")\")].cluster.server}")

make_secret() { # $1 token Secret in cluster-b, $2 Secret name in cluster-a
  token=$(kubectl --context "$B" -n "$NS" get secret "$1" -o jsonpath='{.data.token}' | base64 -d)
  ca=$(kubectl --context "$B" -n "$NS" get secret "$1" -o jsonpath='{.data.ca\.crt}')
  file=$(mktemp)
  cat > "$file" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: cluster-b
    cluster:
      server: $server
      certificate-authority-data: $ca
users:
  - name: $1
    user:
      token: $token
contexts:
  - name: cluster-b
    context: {cluster: cluster-b, user: $1}
current-context: cluster-b
KUBECONFIG
  kubectl --context "$A" -n "$NS" create secret generic "$2" --from-file=kubeconfig="$file" \
    --dry-run=client -o yaml | kubectl --context "$A" apply -f -
  rm -f "$file"
}

make_secret mcip-router-reader-token cluster-b-reader
make_secret mcip-export-member-token cluster-b-export
