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
