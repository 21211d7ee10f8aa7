{{/*
Names: kustomize's namePrefix over the names of deploy/. The prefix is namePrefix when
set, "" for a release named otelcol-relay, "<release>-" for any other.
*/}}
{{- define "relay.prefix" -}}
{{- if kindIs "string" .Values.namePrefix -}}
{{- .Values.namePrefix -}}
{{- else if ne .Release.Name "otelcol-relay" -}}
{{- printf "%s-" .Release.Name -}}
{{- end -}}
{{- end -}}

{{/* The name of the object deploy/ names "otelcol-relay<suffix>": (list . "-agent"). */}}
{{- define "relay.name" -}}
{{- $root := index . 0 -}}
{{- printf "%sotelcol-relay%s" (include "relay.prefix" $root) (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels of an object's metadata: deploy/'s two, plus helm's own. Selectors and pod
templates take "relay.selector" only, so that neither changes with the chart's version
and a kustomize install's StatefulSet (its selector is immutable) can be taken over.
*/}}
{{- define "relay.labels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: otelcol-relay
{{- with index . 1 }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{ include "relay.helmLabels" $root }}
{{- end -}}

{{/* What helm adds to deploy/'s labels: which release and chart an object is of. */}}
{{- define "relay.helmLabels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "relay.selector" -}}
app.kubernetes.io/name: otelcol-relay
app.kubernetes.io/component: {{ . }}
{{- end -}}

{{- define "relay.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
A generated ConfigMap's name: kustomize's configMapGenerator adds a hash of the
content, so that a changed configuration is a new name in the pod template and rolls
the pods. (list . "-config" $data)
*/}}
{{- define "relay.hashedName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "relay.name" (list $root (index . 1))) (index . 2 | toJson | sha256sum | trunc 10) -}}
{{- end -}}

{{/* The relay's configuration files (ConfigMap data, as JSON). */}}
{{- define "relay.configData" -}}
{{- $data := dict "config.yaml" (.Files.Get "files/gateway.yaml") "receiver-tls.yaml" (.Files.Get "files/receiver-tls.yaml") -}}
{{- if or .Values.backends.enabled .Values.backends.list -}}
{{- $_ := set $data "backends.yaml" (dict "backends" .Values.backends.list | toYaml) -}}
{{- end -}}
{{- toJson $data -}}
{{- end -}}

{{- define "relay.agentConfigData" -}}
{{- dict "config.yaml" (.Files.Get "files/agent.yaml") | toJson -}}
{{- end -}}

{{/*
The default backend's env, and with defaultBackend.mtls its CA and client keypair
(components/backend-default-mtls): the same in the relay's and federation's
StatefulSets, as that component patches both.
*/}}
{{- define "relay.defaultBackendEnv" -}}
- name: OTEL_EXPORTER_DEFAULT_ENDPOINT
  valueFrom:
    configMapKeyRef:
      name: {{ .Values.defaultBackend.configMap }}
      key: endpoint
- name: OTEL_EXPORTER_DEFAULT_AUTHORIZATION
  valueFrom:
    secretKeyRef:
      name: {{ .Values.defaultBackend.authorizationSecret }}
      key: authorization
{{- if .Values.defaultBackend.mtls.enabled }}
- name: OTEL_EXPORTER_DEFAULT_CA_FILE
  value: /certs/default/ca.crt
- name: OTEL_EXPORTER_DEFAULT_CERT_FILE
  value: /certs/default/tls.crt
- name: OTEL_EXPORTER_DEFAULT_KEY_FILE
  value: /certs/default/tls.key
{{- end }}
{{- end -}}

{{/*
The mounts of the backends' material: the default backend's CA and keypair with
defaultBackend.mtls, and, when the workload reads a backends list, the listed
backends' CAs and keypairs. (list . withBackends)
*/}}
{{- define "relay.backendMounts" -}}
{{- $root := index . 0 -}}
{{- if $root.Values.defaultBackend.mtls.enabled }}
- name: backend-default
  mountPath: /certs/default
  readOnly: true
{{- end }}
{{- if index . 1 }}
- name: exporter-cas
  mountPath: /certs/exporter-cas
  readOnly: true
- name: exporter-certs
  mountPath: /certs/exporter-certs
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volumes of "relay.backendMounts", 0440 for the keys. (list . withBackends) */}}
{{- define "relay.backendVolumes" -}}
{{- $root := index . 0 -}}
{{- if $root.Values.defaultBackend.mtls.enabled }}
- name: backend-default
  projected:
    defaultMode: 288
    sources:
      - configMap:
          name: {{ $root.Values.defaultBackend.configMap }}
          items: [{key: ca.crt, path: ca.crt}]
      - secret:
          name: {{ $root.Values.defaultBackend.mtls.tlsSecret }}
          items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]
{{- end }}
{{- if index . 1 }}
- name: exporter-cas
  configMap:
    name: {{ $root.Values.backends.casConfigMap }}
    optional: true
- name: exporter-certs
  secret:
    secretName: {{ $root.Values.backends.certsSecret }}
    optional: true
    defaultMode: 288
{{- end }}
{{- end -}}

{{/* Plain env from a map, sorted by name, then full EnvVar objects. (list env extraEnv) */}}
{{- define "relay.extraEnv" -}}
{{- $env := index . 0 -}}
{{- range $k := keys $env | sortAlpha }}
- name: {{ $k }}
  value: {{ get $env $k | toString | quote }}
{{- end }}
{{- with index . 1 }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "relay.fluentBitLabels" -}}
app.kubernetes.io/name: fluent-bit
app.kubernetes.io/part-of: otelcol-relay
{{ include "relay.helmLabels" . }}
{{- end -}}
