{{/* Chart name, at most 63 characters. */}}
{{- define "mcip-router.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart, unless the release name already holds the chart name. */}}
{{- define "mcip-router.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcip-router.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcip-router.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The router pods' labels: the selector labels and a component of their own. The export controller's
pods carry the selector labels too (with component export-controller), so whatever must find the
router pods alone (a relay pool's selector, the Endpoint Picker NetworkPolicy, kubectl get pod -l)
matches these.
*/}}
{{- define "mcip-router.routerPodLabels" -}}
{{ include "mcip-router.selectorLabels" . }}
app.kubernetes.io/component: router
{{- end }}

{{- define "mcip-router.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mcip-router.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mcip-router.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcip-router.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The router image. Nobody publishes one: the install must name the image it built and pushed. */}}
{{- define "mcip-router.image" -}}
{{- if or (not .Values.image.repository) (eq .Values.image.repository "REGISTRY/mcip-router") }}
{{- fail "image.repository is not set: build the mcip-router image from the repository's Dockerfile, push it to a registry your nodes pull from (IMAGE=<registry>/mcip-router PUSH=1 npm run image) and install with --set image.repository=<registry>/mcip-router (and image.tag when it is not the chart's appVersion)" }}
{{- end }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The leader-election Lease; the router config and the Role both use these. */}}
{{- define "mcip-router.leaseName" -}}
{{- default (printf "%s-import-controller" (include "mcip-router.fullname" .)) .Values.controller.leaderElection.leaseName }}
{{- end }}

{{- define "mcip-router.leaseNamespace" -}}
{{- default .Release.Namespace .Values.controller.leaderElection.leaseNamespace }}
{{- end }}

{{/* The router's ext_proc address: exactly what the bundled Envoy bootstraps dial. */}}
{{- define "mcip-router.extProcListen" -}}
{{- if eq .Values.router.transport "unix" }}
{{- "unix:/var/run/mcip/extproc.sock" }}
{{- else }}
{{- "127.0.0.1:9002" }}
{{- end }}
{{- end }}

{{- define "mcip-router.envoyBootstrap" -}}
{{- if .Values.envoy.bootstrap }}
{{- .Values.envoy.bootstrap }}
{{- else if eq .Values.mode "Parent" }}
{{- include "mcip-router.bundledEnvoy" (dict "text" (.Files.Get "files/envoy-parent-tls.yaml") "extProc" .Values.extProc) }}
{{- else if eq .Values.router.transport "unix" }}
{{- include "mcip-router.bundledEnvoy" (dict "text" (.Files.Get "files/envoy-unix-socket.yaml") "extProc" .Values.extProc) }}
{{- else }}
{{- include "mcip-router.bundledEnvoy" (dict "text" (.Files.Get "files/envoy.yaml") "extProc" .Values.extProc) }}
{{- end }}
{{- end }}

{{/* A bundled bootstrap ("text") whose router-cluster circuit breaker (max_requests, the files carry
the router's default) follows extProc.maxStreams when the values set it. */}}
{{- define "mcip-router.bundledEnvoy" -}}
{{- if .extProc.maxStreams }}
{{- replace "max_requests: 10000" (printf "max_requests: %d" (int .extProc.maxStreams)) .text }}
{{- else }}
{{- .text }}
{{- end }}
{{- end }}

{{/* Where a remote member's kubeconfig Secret is mounted (argument: the member's name). */}}
{{- define "mcip-router.memberDir" -}}
{{- printf "/var/run/secrets/mcip-router/members/%s" . }}
{{- end }}


{{/* Where a member's credential Secrets are mounted (argument: the member's name). */}}
{{- define "mcip-router.credentialsDir" -}}
{{- printf "/var/run/secrets/mcip-router/credentials/%s" . }}
{{- end }}

{{/*
A member's router config `epp` block: its `epp` values with the files of its credential
Secrets filled in (argument: dict "name" "epp" "credentials"). Values the operator set win.
*/}}
{{- define "mcip-router.memberEpp" -}}
{{- $dir := include "mcip-router.credentialsDir" .name -}}
{{- $c := .credentials | default dict -}}
{{- $fill := dict -}}
{{- with $c.eppTls -}}
{{- if .secretName -}}
{{- $tls := dict -}}
{{- if .ca }}{{ $_ := set $tls "caFile" (printf "%s/epp-tls/ca.crt" $dir) }}{{ end -}}
{{- if .clientCert }}{{ $_ := set $tls "certFile" (printf "%s/epp-tls/tls.crt" $dir) }}{{ $_ := set $tls "keyFile" (printf "%s/epp-tls/tls.key" $dir) }}{{ end -}}
{{- $_ := set $fill "tls" $tls -}}
{{- end -}}
{{- end -}}
{{- $metrics := dict -}}
{{- with $c.metricsTls -}}
{{- if .secretName -}}
{{- $tls := dict -}}
{{- if .ca }}{{ $_ := set $tls "caFile" (printf "%s/metrics-tls/ca.crt" $dir) }}{{ end -}}
{{- if .clientCert }}{{ $_ := set $tls "certFile" (printf "%s/metrics-tls/tls.crt" $dir) }}{{ $_ := set $tls "keyFile" (printf "%s/metrics-tls/tls.key" $dir) }}{{ end -}}
{{- $_ := set $metrics "tls" $tls -}}
{{- end -}}
{{- end -}}
{{- with $c.metricsToken -}}
{{- if .secretName }}{{ $_ := set $metrics "bearerTokenFile" (printf "%s/metrics-token/token" $dir) }}{{ end -}}
{{- end -}}
{{- if $metrics }}{{ $_ := set $fill "metrics" $metrics }}{{ end -}}
{{- toYaml (mergeOverwrite $fill (deepCopy (.epp | default dict))) -}}
{{- end }}

{{/* Volumes of a member's credential Secrets, 0440 (argument: dict "id" "credentials"). */}}
{{- define "mcip-router.credentialVolumes" -}}
{{- $id := .id -}}
{{- $c := .credentials | default dict -}}
{{- with $c.eppTls }}{{ if .secretName }}
- name: creds-{{ $id }}-epp-tls
  secret:
    secretName: {{ .secretName }}
    defaultMode: 288
{{- end }}{{ end }}
{{- with $c.metricsTls }}{{ if .secretName }}
- name: creds-{{ $id }}-metrics-tls
  secret:
    secretName: {{ .secretName }}
    defaultMode: 288
{{- end }}{{ end }}
{{- with $c.metricsToken }}{{ if .secretName }}
- name: creds-{{ $id }}-metrics-token
  secret:
    secretName: {{ .secretName }}
    defaultMode: 288
    items:
      - key: {{ default "token" .key }}
        path: token
{{- end }}{{ end }}
{{- end }}

{{/* The router's mounts of those volumes (argument: dict "id" "name" "credentials"). */}}
{{- define "mcip-router.credentialMounts" -}}
{{- $id := .id -}}
{{- $dir := include "mcip-router.credentialsDir" .name -}}
{{- $c := .credentials | default dict -}}
{{- with $c.eppTls }}{{ if .secretName }}
- name: creds-{{ $id }}-epp-tls
  mountPath: {{ $dir }}/epp-tls
  readOnly: true
{{- end }}{{ end }}
{{- with $c.metricsTls }}{{ if .secretName }}
- name: creds-{{ $id }}-metrics-tls
  mountPath: {{ $dir }}/metrics-tls
  readOnly: true
{{- end }}{{ end }}
{{- with $c.metricsToken }}{{ if .secretName }}
- name: creds-{{ $id }}-metrics-token
  mountPath: {{ $dir }}/metrics-token
  readOnly: true
{{- end }}{{ end }}
{{- end }}

{{/* The Secret holding the relay key: the one the values name, else the chart's own. */}}
{{- define "mcip-router.relayKeySecret" -}}
{{- default (printf "%s-relay-key" (include "mcip-router.fullname" .)) .Values.endpointPicker.relay.keySecret.name }}
{{- end }}

{{/* Whether the pods run the relay: the Endpoint Picker role with relay.enabled ("true" or ""). */}}
{{- define "mcip-router.relayEnabled" -}}
{{- if and .Values.endpointPicker.enabled .Values.endpointPicker.relay.enabled }}true{{ end }}
{{- end }}

{{/* The relay Envoy's bootstrap (files/relay*.yaml), listening on endpointPicker.relay.port. */}}
{{- define "mcip-router.relayBootstrap" -}}
{{- $file := ternary "files/relay-parent-tls.yaml" "files/relay.yaml" (eq .Values.mode "Parent") }}
{{- replace "port_value: 8443" (printf "port_value: %d" (int .Values.endpointPicker.relay.port)) (.Files.Get $file) }}
{{- end }}

{{/*
Refuses Endpoint Picker ports that another listener in the pod holds (the pod shares one network
namespace): Envoy's 8080, the router's ext_proc 9002, admin and debug ports, the relay verifier
9005, the Envoys' admin ports 19000 and 19001, and the relay port.
*/}}
{{- define "mcip-router.checkEndpointPicker" -}}
{{- $ep := .Values.endpointPicker }}
{{- if not $ep.ports }}
{{- fail "endpointPicker.ports is empty: list one port per multi-cluster pool (the number its endpointPickerRef.port names)" }}
{{- end }}
{{- $taken := dict "8080" "Envoy's listener" "9002" "the router's ext_proc listener (127.0.0.1:9002)" "9005" "the relay verifier (listen.relay 127.0.0.1:9005)" "19000" "Envoy's admin" "19001" "the relay Envoy's admin" }}
{{- $_ := set $taken (printf "%d" (int .Values.router.adminPort)) "router.adminPort" }}
{{- $_ := set $taken (printf "%d" (int .Values.router.debugPort)) "router.debugPort" }}
{{- if $ep.relay.enabled }}
{{- if hasKey $taken (printf "%d" (int $ep.relay.port)) }}
{{- fail (printf "endpointPicker.relay.port %d is taken in the pod by %s" (int $ep.relay.port) (index $taken (printf "%d" (int $ep.relay.port)))) }}
{{- end }}
{{- $_ := set $taken (printf "%d" (int $ep.relay.port)) "endpointPicker.relay.port" }}
{{- end }}
{{- range $ep.ports }}
{{- if hasKey $taken (printf "%d" (int .)) }}
{{- fail (printf "endpointPicker.ports: %d is taken in the pod by %s" (int .) (index $taken (printf "%d" (int .)))) }}
{{- end }}
{{- $_ := set $taken (printf "%d" (int .)) "another endpointPicker.ports entry" }}
{{- end }}
{{- if and $ep.tls.secretName $ep.tls.plaintext }}
{{- fail "endpointPicker.tls: secretName and plaintext exclude each other" }}
{{- end }}
{{- if and $ep.relay.enabled (eq .Values.mode "Parent") (not .Values.envoy.remoteGatewayCASecret) }}
{{- fail "endpointPicker.relay in mode Parent needs envoy.remoteGatewayCASecret: the relay sends to the remote gateways over TLS and verifies them against its ca.crt (files/relay-parent-tls.yaml)" }}
{{- end }}
{{- if and (eq $ep.defaultAnswer "relay") (not $ep.relay.enabled) }}
{{- fail "endpointPicker.defaultAnswer is relay but endpointPicker.relay.enabled is false" }}
{{- end }}
{{- if and $ep.networkPolicy.enabled (not $ep.networkPolicy.gatewayNamespaceSelector) }}
{{- fail "endpointPicker.networkPolicy.gatewayNamespaceSelector is empty: name the namespace of your gateway's pods (e.g. matchLabels: { kubernetes.io/metadata.name: <namespace> }), or set endpointPicker.networkPolicy.enabled false" }}
{{- end }}
{{- end }}

{{/*
A kubernetes source's client settings, each only when set (argument: a member's or a hub's
values): namespaces, qps, burst, requestTimeoutMs, watchIdleTimeoutMs, maxResponseBytes.
Starts with a newline: include it with `| indent N` after the source's first key.
*/}}
{{- define "mcip-router.sourceTuning" -}}
{{- with .namespaces }}
namespaces: {{ toJson . }}
{{- end }}
{{- with .qps }}
qps: {{ toJson . }}
{{- end }}
{{- with .burst }}
burst: {{ toJson . }}
{{- end }}
{{- with .requestTimeoutMs }}
requestTimeoutMs: {{ toJson . }}
{{- end }}
{{- with .watchIdleTimeoutMs }}
watchIdleTimeoutMs: {{ toJson . }}
{{- end }}
{{- with .maxResponseBytes }}
maxResponseBytes: {{ toJson . }}
{{- end }}
{{- end }}

{{/*
How to reach a hub (argument: dict "hub" <its values> "dir" <where its kubeconfig Secret is
mounted>): the kubeconfig of hub.kubeconfigSecret, else the pod's own service account.
*/}}
{{- define "mcip-router.hubSource" -}}
{{- $hub := .hub -}}
{{- if $hub.kubeconfigSecret.name }}
kubeconfig: {{ printf "%s/kubeconfig" .dir | quote }}
{{- with $hub.context }}
context: {{ . | quote }}
{{- end }}
{{- if $hub.allowExecPlugins }}
allowExecPlugins: true
{{- end }}
{{- else }}
inCluster: true
{{- end }}
{{- include "mcip-router.sourceTuning" $hub }}
{{- end }}

{{/* A hub kubeconfig Secret as a volume (argument: dict "name" <volume> "secret" <{name, key}>), 0440. */}}
{{- define "mcip-router.kubeconfigVolume" -}}
- name: {{ .name }}
  secret:
    secretName: {{ .secret.name }}
    defaultMode: 288
    items:
      - key: {{ default "kubeconfig" .secret.key }}
        path: kubeconfig
{{- end }}
