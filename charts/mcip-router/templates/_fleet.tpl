{{/*
Members from a fleet manager's ClusterProfiles (fleet.clusterProfiles): the router config block,
and the provider file and hub kubeconfig the routers and the export controller mount where that
block names them.
*/}}

{{/* Where the provider file is mounted (router config fleet.clusterProfiles.providerFile is <dir>/providers.json). */}}
{{- define "mcip-router.fleetProvidersDir" -}}
/etc/mcip-fleet
{{- end }}

{{/* Where the hub's kubeconfig Secret is mounted. */}}
{{- define "mcip-router.fleetHubDir" -}}
/var/run/secrets/mcip-router/fleet-hub
{{- end }}

{{/* Whether a providers value names a ConfigMap or holds the file inline ("true" or ""). */}}
{{- define "mcip-router.hasProviders" -}}
{{- if or .configMap.name .inline }}true{{ end }}
{{- end }}

{{/*
The ConfigMap a pod takes its provider file from (argument: dict "providers" <values> "own"
<the chart's ConfigMap name for inline providers>): the one the operator names, else the chart's.
*/}}
{{- define "mcip-router.providersConfigMap" -}}
{{- default .own .providers.configMap.name }}
{{- end }}

{{- define "mcip-router.fleetProvidersName" -}}
{{- printf "%s-fleet-providers" (include "mcip-router.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcip-router.exportFleetProvidersName" -}}
{{- printf "%s-fleet-providers" (include "mcip-router.exportName" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Refuses fleet values the router would refuse at start, or that leave a path unmounted. */}}
{{- define "mcip-router.checkFleet" -}}
{{- $cp := .Values.fleet.clusterProfiles }}
{{- if not $cp.namespace }}
{{- fail "fleet.clusterProfiles.namespace is empty: name the hub namespace whose ClusterProfiles are the members (e.g. fleet-system, or the namespace bound to your Open Cluster Management ManagedClusterSet)" }}
{{- end }}
{{- range $what, $p := dict "fleet.clusterProfiles.providers" $cp.providers "exportController.fleet.providers" .Values.exportController.fleet.providers }}
{{- if and $p.configMap.name $p.inline }}
{{- fail (printf "%s: configMap.name and inline exclude each other" $what) }}
{{- end }}
{{- end }}
{{- if not (include "mcip-router.hasProviders" $cp.providers) }}
{{- fail "fleet.clusterProfiles.providers: name the ConfigMap holding your provider file (configMap.name) or give the file inline (inline.providers)" }}
{{- end }}
{{- end }}

{{/* The router config block (the routers' and the export controller's; they share the config). */}}
{{- define "mcip-router.fleetConfig" -}}
{{- $cp := .Values.fleet.clusterProfiles -}}
clusterProfiles:
  hub:
    {{- include "mcip-router.hubSource" (dict "hub" $cp.hub "dir" (include "mcip-router.fleetHubDir" .)) | trim | nindent 4 }}
  namespace: {{ $cp.namespace | quote }}
  {{- with $cp.labelSelector }}
  labelSelector: {{ . | quote }}
  {{- end }}
  {{- with $cp.apiVersion }}
  apiVersion: {{ . | quote }}
  {{- end }}
  {{- with $cp.localProfile }}
  localProfile: {{ . | quote }}
  {{- end }}
  providerFile: {{ printf "%s/providers.json" (include "mcip-router.fleetProvidersDir" .) | quote }}
  {{- with $cp.plugins }}
  plugins:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $cp.members }}
  members:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* A pod's mounts for the fleet block: the provider file and, with a Secret, the hub's kubeconfig. */}}
{{- define "mcip-router.fleetMounts" -}}
- name: fleet-providers
  mountPath: {{ include "mcip-router.fleetProvidersDir" . }}
  readOnly: true
{{- if .Values.fleet.clusterProfiles.hub.kubeconfigSecret.name }}
- name: fleet-hub
  mountPath: {{ include "mcip-router.fleetHubDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/*
Their volumes (argument: dict "root" $ "providers" <the pod's providers values> "own" <the chart's
ConfigMap for inline providers>): the provider file under the name providers.json whatever its
key in the ConfigMap.
*/}}
{{- define "mcip-router.fleetVolumes" -}}
{{- $hub := .root.Values.fleet.clusterProfiles.hub -}}
- name: fleet-providers
  configMap:
    name: {{ include "mcip-router.providersConfigMap" . }}
    items:
      - key: {{ if .providers.configMap.name }}{{ default "providers.json" .providers.configMap.key }}{{ else }}providers.json{{ end }}
        path: providers.json
{{- if $hub.kubeconfigSecret.name }}
{{ include "mcip-router.kubeconfigVolume" (dict "name" "fleet-hub" "secret" $hub.kubeconfigSecret) }}
{{- end }}
{{- end }}
