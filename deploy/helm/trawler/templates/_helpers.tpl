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

{{/*
The bundled MongoDB's root password: the configured one, else the one a
previous install generated, else a new random one.
*/}}
{{- define "trawler.mongoPassword" -}}
{{- if .Values.mongo_auth.password -}}
{{ .Values.mongo_auth.password }}
{{- else -}}
{{- $old := lookup "v1" "Secret" .Release.Namespace (printf "%s-mongo-auth" .Values.name) -}}
{{- if and $old (index $old.data "MONGO_INITDB_ROOT_PASSWORD") -}}
{{ index $old.data "MONGO_INITDB_ROOT_PASSWORD" | b64dec }}
{{- else -}}
{{ randAlphaNum 32 }}
{{- end -}}
{{- end -}}
{{- end }}

{{/* The Service DNS name of a bundled store, by suffix (mongo, s3). */}}
{{- define "trawler.localHost" -}}
{{ printf "%s-%s.%s.svc.%s" .root.Values.name .suffix .root.Release.Namespace .root.Values.cluster_domain }}
{{- end }}

{{/* trawler's MongoDB connection string. */}}
{{- define "trawler.mongoURI" -}}
{{- if .Values.mongo_local -}}
{{- $host := include "trawler.localHost" (dict "root" . "suffix" "mongo") -}}
{{- printf "mongodb://%s:%s@%s:27017/" (.Values.mongo_auth.username | urlquery) (include "trawler.mongoPassword" . | urlquery) $host -}}
{{- with .Values.mongo_uri_options }}?{{ . }}{{ end -}}
{{- else -}}
{{ .Values.mongo_uri }}
{{- end -}}
{{- end }}

{{/* The endpoint of the bundled S3 server. */}}
{{- define "trawler.s3Endpoint" -}}
{{ printf "http://%s:%v/" (include "trawler.localHost" (dict "root" . "suffix" "s3")) .Values.s3_port }}
{{- end }}

{{/* The storage whose keys and bucket the bundled S3 server is set up with. */}}
{{- define "trawler.localStorage" -}}
{{- $found := dict -}}
{{- range .Values.storages }}{{ if and (not .endpoint_url) (not $found.name) }}{{ $_ := set $found "name" .name }}{{ $_ := set $found "access_key" .access_key }}{{ $_ := set $found "secret_key" .secret_key }}{{ $_ := set $found "bucket_name" .bucket_name }}{{ end }}{{ end -}}
{{ toJson $found }}
{{- end }}

{{/*
The storages as trawler and the crawlers see them, as JSON: an entry
without endpoint_url gets the bundled S3 server's. Browsers cannot reach
that server's Service, so trawler serves its bucket at its own origin
under /data/ (docs/storage.md), with links signed for the internal
endpoint, as upstream's chart does: entries in that bucket get
access_endpoint_url /data/ unless they set their own.
*/}}
{{- define "trawler.storages" -}}
{{- $local := include "trawler.localStorage" . | fromJson -}}
{{- $storages := list -}}
{{- range .Values.storages -}}
{{- $s := deepCopy . -}}
{{- if not $s.endpoint_url -}}
{{- $_ := set $s "endpoint_url" (include "trawler.s3Endpoint" $) -}}
{{- if and $.Values.s3_local (not $s.access_endpoint_url) (eq $s.bucket_name $local.bucket_name) -}}
{{- $_ := set $s "access_endpoint_url" "/data/" -}}
{{- $_ := set $s "use_access_for_presign" false -}}
{{- end -}}
{{- end -}}
{{- $storages = append $storages $s -}}
{{- end -}}
{{ toJson $storages }}
{{- end }}

{{/* Labels that select the pods of a bundled store, by component. */}}
{{- define "trawler.storeSelectorLabels" -}}
app.kubernetes.io/name: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: trawler
{{- end }}
