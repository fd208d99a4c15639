{{/* The export controller's Deployment, ServiceAccount and RBAC share this name. */}}
{{- define "mcip-router.exportName" -}}
{{- printf "%s-export-controller" (include "mcip-router.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcip-router.exportLeaseName" -}}
{{- default (include "mcip-router.exportName" .) .Values.exportController.leaderElection.leaseName }}
{{- end }}

{{- define "mcip-router.exportLeaseNamespace" -}}
{{- default .Release.Namespace .Values.exportController.leaderElection.leaseNamespace }}
{{- end }}

{{/* What the export controller needs in every member (deploy/rbac/export-controller.yaml). */}}
{{- define "mcip-router.exportRules" -}}
- apiGroups: ["inference.networking.k8s.io"]
  resources: ["inferencepools"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["inference.networking.k8s.io"]
  resources: ["inferencepools/status"]
  verbs: ["get", "patch"]
- apiGroups: ["inference.networking.x-k8s.io"]
  resources: ["inferencepoolimports"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: ["inference.networking.x-k8s.io"]
  resources: ["inferencepoolimports/status"]
  verbs: ["get", "patch"]
{{- end }}

{{/* A controller reads its own cluster's name in the ClusterSet (About API) at start. */}}
{{- define "mcip-router.aboutNameRule" -}}
- apiGroups: ["about.k8s.io"]
  resources: ["clusterproperties"]
  resourceNames: ["cluster.clusterset.k8s.io"]
  verbs: ["get"]
{{- end }}

{{/* The export agent's (push/pull topology) Deployment, ServiceAccount, RBAC and config share this name. */}}
{{- define "mcip-router.agentName" -}}
{{- printf "%s-export-agent" (include "mcip-router.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcip-router.agentLeaseName" -}}
{{- default (include "mcip-router.agentName" .) .Values.exportAgent.leaderElection.leaseName }}
{{- end }}

{{- define "mcip-router.agentLeaseNamespace" -}}
{{- default .Release.Namespace .Values.exportAgent.leaderElection.leaseNamespace }}
{{- end }}

{{/* Where the export agent's hub kubeconfig Secret is mounted. */}}
{{- define "mcip-router.agentHubDir" -}}
/var/run/secrets/mcip-router/export-hub
{{- end }}

{{/*
A controller's own ServiceAccount, its ClusterRole of mcip-router.exportRules (and `extraRules`,
a rendered rules list) with the binding, and, with leader election, the Role and binding for its
Lease (argument: dict "root" $ "name" <objects' name> "leaderElection" <values> "lease" <name>
"leaseNamespace" <namespace> "extraRules" <text>).
*/}}
{{- define "mcip-router.controllerIdentity" -}}
{{- $root := .root -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "mcip-router.labels" $root | nindent 4 }}
{{- if $root.Values.rbac.create }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .name }}
  labels:
    {{- include "mcip-router.labels" $root | nindent 4 }}
rules:
  {{- include "mcip-router.exportRules" $root | nindent 2 }}
  {{- with .extraRules }}
  {{- . | nindent 2 }}
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .name }}
  labels:
    {{- include "mcip-router.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .name }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ $root.Release.Namespace }}
{{- if .leaderElection.enabled }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .name }}-leader-election
  namespace: {{ .leaseNamespace }}
  labels:
    {{- include "mcip-router.labels" $root | nindent 4 }}
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["create"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ .lease | quote }}]
    verbs: ["get", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .name }}-leader-election
  namespace: {{ .leaseNamespace }}
  labels:
    {{- include "mcip-router.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ .name }}-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A controller container of the router image without its volumeMounts (argument: dict "root" $
"name" <container> "flag" <its mcip-router flag> "config" <config file> "resources" <values>): the admin port with /healthz and
/readyz probes, /metrics for the release's ServiceMonitor, as the routers'.
*/}}
{{- define "mcip-router.controllerContainer" -}}
{{- $root := .root -}}
- name: {{ .name }}
  image: {{ include "mcip-router.image" $root | quote }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  args:
    - {{ .flag }}
    - --config
    - {{ .config }}
  env:
    - name: POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
  ports:
    - name: admin
      containerPort: {{ $root.Values.router.adminPort }}
      protocol: TCP
  livenessProbe:
    httpGet:
      path: /healthz
      port: admin
    periodSeconds: 10
  readinessProbe:
    httpGet:
      path: /readyz
      port: admin
    periodSeconds: 10
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.containerSecurityContext | nindent 4 }}
{{- end }}

{{/* Where a controller's pods run: nodeSelector and tolerations, as the routers'. */}}
{{- define "mcip-router.controllerPlacement" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Refuses a status writer that would run as several replicas without a Lease: each would write the
same objects and statuses against the others (argument: dict "what" <values key> "replicas"
<count> "leaderElection" <values> "scaled" <true when an autoscaler sets the count>).
*/}}
{{- define "mcip-router.checkOneWriter" -}}
{{- if and (not .leaderElection.enabled) (or .scaled (gt (int .replicas) 1)) }}
{{- fail (printf "%s.leaderElection.enabled is false with more than one replica: every replica would write the same objects and statuses; enable leader election or run one replica" .what) }}
{{- end }}
{{- end }}
