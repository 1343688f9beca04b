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

{{/* The configuration with one url server per stdioServers entry: the gateway reaches
each stdio server's container over loopback with the release's stdio token
(docs/deploy.md#stdio-servers). */}}
{{- define "mcpgate.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $servers := dict }}
{{- if $cfg.mcpServers }}{{- $servers = $cfg.mcpServers }}{{- end }}
{{- range $i, $name := keys .Values.stdioServers | sortAlpha }}
{{- if hasKey $servers $name }}
{{- fail (printf "stdioServers.%s: config.mcpServers has a server of that name too" $name) }}
{{- end }}
{{- $_ := set $servers $name (dict "url" (printf "http://127.0.0.1:%v/mcp" (include "mcpgate.stdioPort" (list $ $name $i))) "headers" (dict "Authorization" "Bearer ${MCPGATE_STDIO_TOKEN}")) }}
{{- end }}
{{- $_ := set $cfg "mcpServers" $servers }}
{{- toPrettyJson $cfg }}
{{- end -}}

{{/* The loopback port of stdioServers entry (list $ name index): its port, or 9100 plus
its place in name order. */}}
{{- define "mcpgate.stdioPort" -}}
{{- $s := index (index . 0).Values.stdioServers (index . 1) }}
{{- $s.port | default (add 9100 (index . 2)) }}
{{- end -}}

{{/* A stdio server's container's configuration: only callers with the release's stdio
token, which the gateway alone holds (docs/deploy.md#stdio-servers). */}}
{{- define "mcpgate.stdioConfig" -}}
{{- toPrettyJson (dict "mcpgate" (dict "tokens" (list (dict "sha256" "${MCPGATE_STDIO_TOKEN_SHA256}" "userID" "gateway")))) }}
{{- end -}}
