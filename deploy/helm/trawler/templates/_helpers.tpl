{{/* Labels of every object of the release. */}}
{{- define "trawler.labels" -}}
app.kubernetes.io/name: trawler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* Labels that select the trawler pods. */}}
{{- define "trawler.selectorLabels" -}}
app.kubernetes.io/name: trawler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The crawler's command-line flags beyond those trawler sets per pod, as
the Browsertrix chart renders them; the crawler appends $CRAWL_ARGS to
its argv. Empty user-agent flags are left out rather than passed as "".
--restartsOnError is spelled as browsertrix-crawler 0.11 spells it.
*/}}
{{- define "trawler.crawlArgs" -}}
--workers {{ .Values.crawler_browser_instances | default 1 }}
{{- printf " --sizeLimit %v" .Values.crawler_session_size_limit_bytes }}
{{- printf " --timeLimit %v" .Values.crawler_session_time_limit_seconds }}
{{- printf " --maxPageLimit %v" (.Values.max_pages_per_crawl | default 0) }}
{{- printf " --healthCheckPort %v" .Values.crawler_liveness_port }}
{{- printf " --diskUtilization %v" .Values.disk_utilization_threshold }}
{{- with .Values.user_agent_suffix }}{{ printf " --userAgentSuffix %q" . }}{{ end }}
{{- with .Values.user_agent }}{{ printf " --userAgent %q" . }}{{ end }}
{{- printf " --logging %v" .Values.crawler_logging_opts }}
{{- printf " --text %v" .Values.crawler_extract_full_text }}
{{- " --generateWACZ --collection thecrawl --screencastPort 9037 --logErrorsToRedis" }}
{{- with .Values.crawler_extra_args }}{{ printf " %s" . }}{{ end }}
{{- " --restartsOnError" }}
{{- end }}

{{/*
The JWT key: the configured one, else the one a previous install
generated, else a new random one, so upgrades keep users logged in.
*/}}
{{- define "trawler.jwtSecret" -}}
{{- if .Values.backend_password_secret -}}
{{ .Values.backend_password_secret }}
{{- else -}}
{{- $old := lookup "v1" "Secret" .Release.Namespace (printf "%s-secrets" .Values.name) -}}
{{- if and $old (index $old.data "TRAWLER_API_JWT_SECRET") -}}
{{ index $old.data "TRAWLER_API_JWT_SECRET" | b64dec }}
{{- else -}}
{{ randAlphaNum 48 }}
{{- end -}}
{{- end -}}
{{- end }}
