{{/* The name of this release's objects. */}}
{{- define "gpucal.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries; the scrape config selects on name and component. */}}
{{- define "gpucal.labels" -}}
app.kubernetes.io/name: gpucal
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpucal.selector" -}}
app.kubernetes.io/name: gpucal
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpucal.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "gpucal.serverSecret" -}}
{{ .Values.server.existingSecret | default (printf "%s-server" (include "gpucal.fullname" .)) }}
{{- end -}}

{{- define "gpucal.agentSecret" -}}
{{ .Values.agent.existingSecret | default (printf "%s-agent" (include "gpucal.fullname" .)) }}
{{- end -}}
