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
The 1.x crawlers' flags, as today's Browsertrix chart renders them:
--workers is on each pod's command line (the operator sets it), and
pages, error and behaviour lines go to the crawl's Redis.
*/}}
{{- define "trawler.crawlArgsV1" -}}
--sizeLimit {{ .Values.crawler_session_size_limit_bytes }}
{{- printf " --timeLimit %v" .Values.crawler_session_time_limit_seconds }}
{{- printf " --maxPageLimit %v" (.Values.max_pages_per_crawl | default 0) }}
{{- printf " --healthCheckPort %v" .Values.crawler_liveness_port }}
{{- printf " --diskUtilization %v" .Values.disk_utilization_threshold }}
{{- with .Values.user_agent_suffix }}{{ printf " --userAgentSuffix %q" . }}{{ end }}
{{- with .Values.user_agent }}{{ printf " --userAgent %q" . }}{{ end }}
{{- printf " --logging %v" .Values.crawler_logging_opts }}
{{- printf " --text %v" .Values.crawler_extract_full_text }}
{{- " --generateWACZ --collection thecrawl --screencastPort 9037" }}
{{- " --writePagesToRedis --logErrorsToRedis --logBehaviorsToRedis" }}
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

{{/*
GOMEMLIMIT for trawler: 90% of its memory limit (trawler_memory, a
Kubernetes quantity), in bytes. The Go runtime then collects harder as
the heap nears the limit instead of the pod being OOM-killed; the tenth
left covers what the runtime does not count (the binary's own pages,
memory outside the Go heap and stacks).
*/}}
{{- define "trawler.gomemlimit" -}}
{{- $q := toString .Values.trawler_memory -}}
{{- $n := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $units := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18
  "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 -}}
{{- $unit := trimPrefix $n $q -}}
{{- if not (hasKey $units $unit) -}}
{{- fail (printf "trawler_memory %q is not a Kubernetes quantity" $q) -}}
{{- end -}}
{{- $bytes := int64 (mulf (float64 $n) (get $units $unit)) -}}
{{- div (mul $bytes 9) 10 -}}
{{- end }}

{{/*
host-proxies.json, the crawler's --proxyServerConfig: proxies_match_hosts
(host regex -> proxy id) and the proxies it names, with their key files.
A host mapped to a proxy not in proxies fails the render.
*/}}
{{- define "trawler.hostProxies" -}}
{{- $byID := dict }}
{{- range .Values.proxies }}
{{- $_ := set $byID .id . }}
{{- end }}
{{- $used := dict }}
{{- range $host, $id := .Values.proxies_match_hosts }}
{{- $p := get $byID $id }}
{{- if not $p }}
{{- fail (printf "proxies_match_hosts: %s maps to proxy %s, which is not in proxies" $host $id) }}
{{- end }}
{{- $entry := dict "url" $p.url }}
{{- if $p.ssh_private_key }}
{{- $_ := set $entry "privateKeyFile" (printf "/tmp/proxies/%s-private-key" $id) }}
{{- end }}
{{- if $p.ssh_host_public_key }}
{{- $_ := set $entry "publicHostsFile" (printf "/tmp/proxies/%s-known-hosts" $id) }}
{{- end }}
{{- $_ := set $used $id $entry }}
{{- end }}
{{- dict "matchHosts" .Values.proxies_match_hosts "proxies" $used | toJson }}
{{- end }}
