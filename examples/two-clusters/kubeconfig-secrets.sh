#!/bin/sh
# Builds cluster-a's Secrets for cluster-b from the ServiceAccount token Secrets that
# deploy/rbac/remote.yaml, deploy/rbac/export-member.yaml and deploy/rbac/metrics-reader.yaml
# create in cluster-b:
#   cluster-b-reader         kubeconfig of mcip-router-reader (the routers read cluster-b)
#   cluster-b-export         kubeconfig of mcip-export-member (the export controller writes there)
#   cluster-b-metrics-token  token of mcip-metrics-reader (scrapes of cluster-b's EPP /metrics)
#   sh examples/two-clusters/kubeconfig-secrets.sh
# Contexts: cluster-a and cluster-b in your kubeconfig (A=... B=... to name others). The Secrets
# go to mcip-system in cluster-a, or to SECRETS_NAMESPACE: the namespace of the release that mounts
# them (docs/bring-your-own-gateway.md installs it in the namespace of its pools). Kubernetes fills a token Secret in shortly after it is created: each one is
# waited for, up to TOKEN_WAIT_SECONDS (default 60), and the script fails naming it if it stays empty.
set -eu
A=${A:-cluster-a}
B=${B:-cluster-b}
NS=mcip-system
SECRETS_NS=${SECRETS_NAMESPACE:-$NS}
WAIT=${TOKEN_WAIT_SECONDS:-60}
cluster=$(kubectl config view -o jsonpath="{.contexts[?(@.name==\"$B\")].context.cluster}")
server=$(kubectl config view --raw -o jsonpath="{.clusters[?(@.name==\"$cluster\")].cluster.server}")
if [ -z "$server" ]; then
  echo "kubeconfig-secrets.sh: your kubeconfig has no API server address for context $B" >&2
  exit 1
fi
# The CA that verifies that address, as your kubectl verifies it (--flatten inlines a
# certificate-authority file). None: the API server's certificate is one the system CAs trust
# (e.g. a DNS endpoint behind a public CA), so the kubeconfig names none either.
ca=$(kubectl config view --raw --flatten -o jsonpath="{.clusters[?(@.name==\"$cluster\")].cluster.certificate-authority-data}")
if [ -n "$ca" ]; then
  ca_line="certificate-authority-data: $ca"
else
  ca_line="# no certificate-authority-data: verified against the system CAs, as by your kubectl"
fi

# $1 token Secret in cluster-b, $2 its data key: prints the base64 value
# once it is there; fails after WAIT seconds.
field() {
  waited=0
  while :; do
    value=$(kubectl --context "$B" -n "$NS" get secret "$1" -o jsonpath="{.data.$2}" 2>/dev/null) || value=''
    if [ -n "$value" ]; then
      printf '%s' "$value"
      return 0
    fi
    if [ "$waited" -ge "$WAIT" ]; then
      echo "kubeconfig-secrets.sh: Secret $NS/$1 in $B has no $2 after ${WAIT}s: apply deploy/rbac/ in $B first (the Secret and its ServiceAccount)" >&2
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

# $1 Secret name in cluster-a, $2 key, $3 file with the value.
store() {
  kubectl --context "$A" -n "$SECRETS_NS" create secret generic "$1" --from-file="$2=$3" \
    --dry-run=client -o yaml | kubectl --context "$A" apply -f -
}

make_secret() { # $1 token Secret in cluster-b, $2 Secret name in cluster-a
  # Never `field ... | base64 -d`: a pipeline's status is its last command's, so a timeout would pass.
  b64=$(field "$1" token)
  token=$(printf '%s' "$b64" | base64 -d)
  file=$(mktemp)
  cat > "$file" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: cluster-b
    cluster:
      server: $server
      $ca_line
users:
  - name: $1
    user:
      token: $token
contexts:
  - name: cluster-b
    context: {cluster: cluster-b, user: $1}
current-context: cluster-b
KUBECONFIG
  store "$2" kubeconfig "$file"
  rm -f "$file"
}

copy_token() { # $1 token Secret in cluster-b, $2 Secret name in cluster-a
  b64=$(field "$1" token)
  file=$(mktemp)
  printf '%s' "$b64" | base64 -d > "$file"
  store "$2" token "$file"
  rm -f "$file"
}

make_secret mcip-router-reader-token cluster-b-reader
make_secret mcip-export-member-token cluster-b-export
copy_token mcip-metrics-reader-token cluster-b-metrics-token
