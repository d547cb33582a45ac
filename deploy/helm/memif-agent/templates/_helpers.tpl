{{/* The chart's name, or nameOverride. */}}
{{- define "memif-agent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name
when it holds the chart's name (release memif-agent: memif-agent), else
<release>-<chart>.
*/}}
{{- define "memif-agent.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "memif-agent.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* What selects the agent's pods. */}}
{{- define "memif-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memif-agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object of the release. */}}
{{- define "memif-agent.labels" -}}
{{ include "memif-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "memif-agent.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The agent's service account, as the API server names its user. */}}
{{- define "memif-agent.serviceAccountUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "memif-agent.fullname" . }}
{{- end }}

{{- define "memif-agent.configMapName" -}}
{{ include "memif-agent.fullname" . }}-config
{{- end }}

{{/*
The keys the chart's values set in the agent's config files, by file then
key; the config value's keys are laid over them.
*/}}
{{- define "memif-agent.configKeys" -}}
{{- $keys := dict
  "devicemanager.conf" (dict
    "device-plugin" .Values.devicePlugin.enabled
    "claim-device-count" (ternary .Values.dra.deviceCount 0 .Values.dra.enabled))
  "dradriver.conf" (dict "enabled" .Values.dra.enabled)
  "vswitch.conf" (dict "vpp-api-socket" (ternary .Values.vpp.apiSocket "" .Values.vpp.enabled))
  "metrics.conf" (dict "port" .Values.metrics.port)
  "http.conf" (dict "endpoint" (printf "127.0.0.1:%v" .Values.http.port))
  "networks.conf" dict }}
{{- if not (kindIs "invalid" .Values.networks) }}
{{- $_ := set (index $keys "networks.conf") "networks" .Values.networks }}
{{- end }}
{{- if not (kindIs "invalid" .Values.defaultNetwork) }}
{{- $_ := set (index $keys "networks.conf") "default-network" .Values.defaultNetwork }}
{{- end }}
{{- range $file, $set := .Values.config }}
{{- if not (hasKey $keys $file) }}
{{- $_ := set $keys $file dict }}
{{- end }}
{{- range $key, $value := $set }}
{{- $_ := set (index $keys $file) $key $value }}
{{- end }}
{{- end }}
{{- toJson $keys }}
{{- end }}

{{/*
One config file with keys set: the line "key: ..." (and the indented lines
that continue its value) becomes "key: <JSON value>"; a key the file does
not hold is added at its end. A list is written one JSON item a line.
Takes (list content keys).
*/}}
{{- define "memif-agent.setKeys" -}}
{{- $content := index . 0 }}
{{- range $key, $value := index . 1 }}
{{- $line := printf "%s: %s" $key (toJson $value) }}
{{- if and (kindIs "slice" $value) $value }}
{{- $line = printf "%s:" $key }}
{{- range $value }}
{{- $line = printf "%s\n  - %s" $line (toJson .) }}
{{- end }}
{{- end }}
{{- $pattern := printf "(?m)^%s:.*(\n[ \t]+\\S.*)*" (regexQuoteMeta $key) }}
{{- if regexMatch $pattern $content }}
{{- $content = regexReplaceAllLiteral $pattern $content $line }}
{{- else }}
{{- $content = printf "%s%s\n" $content $line }}
{{- end }}
{{- end }}
{{- $content }}
{{- end }}
