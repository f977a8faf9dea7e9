{{/* Labels every object carries (kustomize's base adds app.kubernetes.io/part-of: osprov). */}}
{{- define "osprov.labels" -}}
app.kubernetes.io/part-of: osprov
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "osprov.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The osprov kinds as {apiGroup: [plural, …]}, read from the CRDs the chart installs: a new kind's
CRD gets its RBAC rules without a second list to keep in step. Namespaced kinds only: the cluster-scoped
region inventory has its own rules (osprov.inventoryKinds). */}}
{{- define "osprov.kinds" -}}
{{- $kinds := dict }}
{{- range $path, $_ := .Files.Glob "crds/*.yaml" }}
{{- $crd := $.Files.Get $path | fromYaml }}
{{- if eq $crd.spec.scope "Namespaced" }}
{{- $plurals := get $kinds $crd.spec.group | default list }}
{{- $_ := set $kinds $crd.spec.group (append $plurals $crd.spec.names.plural) }}
{{- end }}
{{- end }}
{{- toYaml $kinds }}
{{- end }}

{{/* The published region inventory kinds as [{group, plural, verbs}], read from the CRDs: the verbs the
worker needs on each are the CRD's region.osh.openstack.org/worker-verbs annotation (api/registry.py). */}}
{{- define "osprov.inventoryKinds" -}}
{{- $kinds := list }}
{{- range $path, $_ := .Files.Glob "crds/*.yaml" }}
{{- $crd := $.Files.Get $path | fromYaml }}
{{- with index ($crd.metadata.annotations | default dict) "region.osh.openstack.org/worker-verbs" }}
{{- $kinds = append $kinds (dict "group" $crd.spec.group "plural" $crd.spec.names.plural "verbs" (splitList "," .)) }}
{{- end }}
{{- end }}
{{- toYaml (dict "kinds" $kinds) }}
{{- end }}

{{/* envFrom of both programs: the settings, and the codec Secret (required: no `optional`). */}}
{{- define "osprov.envFrom" -}}
envFrom:
  - configMapRef: {name: osprov-settings}
  - secretRef: {name: {{ .Values.codecSecret }}}
{{- end }}

{{- define "osprov.tlsMount" -}}
{{- if .Values.temporal.tls.enabled }}
- {name: temporal-tls, mountPath: /etc/osprov/temporal-tls, readOnly: true}
{{- end }}
{{- end }}

{{- define "osprov.tlsVolume" -}}
{{- if .Values.temporal.tls.enabled }}
- {name: temporal-tls, secret: {secretName: {{ .Values.temporal.tls.secretName }}}}
{{- end }}
{{- end }}

{{/* /healthz and /readyz on the health port: liveness means progress (docs/operations.md). */}}
{{- define "osprov.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: health}
  periodSeconds: {{ .period }}
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: health}
  periodSeconds: 10
  timeoutSeconds: 5
{{- end }}
