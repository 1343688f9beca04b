{{- define "mcpgate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mcpgate.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mcpgate.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mcpgate.secretName" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth" (include "mcpgate.fullname" .)) -}}
{{- end -}}

{{/* The probes' request: /healthz needs no token; the admin listener checks Host, so
the probes name localhost. */}}
{{- define "mcpgate.healthz" -}}
path: /healthz
port: admin
httpHeaders:
  - name: Host
    value: localhost
{{- end -}}
