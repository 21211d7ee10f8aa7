// SPDX-License-Identifier: Apache-2.0

package main

// The dashboards are built with the Grafana Foundation SDK from the tables below
// rather than hand-edited JSON. They read what the shipped monitors scrape: the jobs
// otelcol-relay, otelcol-relay-federation, otelcol-relay-agent and fluent-bit
// (deploy/docs/monitoring.md).

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// File is one dashboard as deploy/components/dashboards holds it.
type File struct {
	Name string // the file's name, e.g. otelcol-relay-overview.json
	JSON []byte
}

// panel is one panel of a dashboard: a time series unless stat is set.
type panel struct {
	title, description, unit string
	stat                     bool
	queries                  []query
}

type query struct{ expr, legend string }

// The relay's own series, selected by the namespace variable so that two installs
// in one cluster are told apart.
const (
	relay      = `job="otelcol-relay",namespace=~"$namespace"`
	federation = `job="otelcol-relay-federation",namespace=~"$namespace"`
	relays     = `job=~"otelcol-relay|otelcol-relay-federation",namespace=~"$namespace"`
	agent      = `job="otelcol-relay-agent",namespace=~"$namespace"`
	fluentBit  = `job="fluent-bit"`
)

var overview = []panel{
	{title: "Log records per second, by hop", unit: "ops",
		description: "What fluent-bit read from the nodes' files and sent, what the agents and the relays accepted, and what the relays sent to the backends. A gap between two consecutive hops that lasts is data waiting (or lost) between them.",
		queries: []query{
			{`sum(rate(fluentbit_input_records_total{` + fluentBit + `}[$__rate_interval]))`, "fluent-bit read"},
			{`sum(rate(fluentbit_output_proc_records_total{` + fluentBit + `}[$__rate_interval]))`, "fluent-bit sent"},
			{`sum(rate(otelcol_receiver_accepted_log_records{` + agent + `}[$__rate_interval]))`, "agents accepted"},
			{`sum(rate(otelcol_receiver_accepted_log_records{` + relay + `}[$__rate_interval]))`, "relays accepted"},
			{`sum(rate(otelcol_exporter_sent_log_records{` + relay + `}[$__rate_interval]))`, "sent to backends"},
		}},
	{title: "Refused, retried and dropped per second", unit: "ops",
		description: "Refusals make the sender retry (nothing lost); fluent-bit's dropped records are lost.",
		queries: []query{
			{`sum(rate(otelcol_receiver_refused_log_records{` + relays + `}[$__rate_interval]))`, "relays refused"},
			{`sum(rate(otelcol_processor_memory_limiter_refused_log_records{` + relays + `}[$__rate_interval]))`, "memory_limiter refused"},
			{`sum(rate(otelcol_admission_refused_requests{` + relays + `}[$__rate_interval]))`, "admission refused (requests)"},
			{`sum(rate(fluentbit_output_retries_total{` + fluentBit + `}[$__rate_interval]))`, "fluent-bit retries (chunks)"},
			{`sum(rate(fluentbit_output_dropped_records_total{` + fluentBit + `}[$__rate_interval]))`, "fluent-bit dropped (lost)"},
		}},
	{title: "Persistent queue fill, by backend", unit: "percentunit",
		description: "Each backend's queue as a share of its bound, the fullest pod. At 100% the relay refuses new data.",
		queries: []query{
			{`max by (exporter) (otelcol_exporter_queue_size{` + relays + `} / otelcol_exporter_queue_capacity{` + relays + `})`, "{{exporter}}"},
		}},
	{title: "Delivery lag, by backend", unit: "s",
		description: "How long the oldest item in each backend's persistent queue has waited, the worst pod: seconds when healthy; it grows while a backend is down or slower than the intake (OtelcolRelayDeliveryLagging past 2 minutes).",
		queries: []query{
			{`max by (exporter) (otelcol_queue_storage_oldest_item_age{` + relays + `})`, "{{exporter}}"},
		}},
	{title: "Log records lost in the last 5 minutes, by hop", unit: "short",
		description: "The accounting rules (otelcol-relay-accounting): records a hop gave up on for good, fluent-bit's dropped records, the agents' and each backend's exports that failed permanently. 0 when nothing is lost; a refusal is not a loss (the sender retries).",
		queries: []query{
			{`sum by (hop, exporter) (otelcol_relay:log_records_lost:increase5m)`, "{{hop}} {{exporter}}"},
		}},
	{title: "Export failures per second, by backend", unit: "ops",
		queries: []query{
			{`sum by (exporter) (rate(otelcol_exporter_send_failed_log_records{` + relays + `}[$__rate_interval]))`, "{{exporter}} logs"},
			{`sum by (exporter) (rate(otelcol_exporter_send_failed_metric_points{` + relays + `}[$__rate_interval]))`, "{{exporter}} metric points"},
		}},
	{title: "fluent-bit buffer free, by node", unit: "percent",
		description: "The share of storage.total_limit_size still free on each node; at 0 fluent-bit deletes its oldest chunks.",
		queries: []query{
			{`min by (node) (fluentbit_output_chunk_available_capacity_percent{` + fluentBit + `})`, "{{node}}"},
		}},
	{title: "Draining relays and data left on volumes", unit: "bytes",
		description: "A relay draining (scale-in, rollout), and what a drain that gave up left queued on its volume.",
		queries: []query{
			{`max by (pod) (otelcol_admission_draining{` + relay + `})`, "{{pod}} draining"},
			{`max by (pod) (last_over_time(otelcol_admission_drain_queue_size{` + relay + `}[7d]))`, "{{pod}} left on volume"},
		}},
	{title: "Certificate expiry", unit: "s", stat: true,
		description: "Time left on each certificate certwatch watches: each backend's (client certificate and CA bundle entries) and the receivers' (certwatch/receivers: serving certificate and client CA bundle).",
		queries: []query{
			{`min by (extension, role, subject) (otelcol_certwatch_certificate_not_after{` + relays + `}) - time()`, "{{extension}} {{role}} {{subject}}"},
		}},
	{title: "Federation metric points per second", unit: "ops",
		queries: []query{
			{`sum by (pod) (rate(otelcol_receiver_accepted_metric_points{` + federation + `}[$__rate_interval]))`, "{{pod}} accepted"},
			{`sum by (pod) (rate(otelcol_exporter_sent_metric_points{` + federation + `}[$__rate_interval]))`, "{{pod}} sent"},
		}},
}

// The backend dashboard's variable picks one exporter.
const backend = relays + `,exporter=~"$exporter"`

var perBackend = []panel{
	{title: "Sent per second", unit: "ops",
		queries: []query{
			{`sum by (pod) (rate(otelcol_exporter_sent_log_records{` + backend + `}[$__rate_interval]))`, "{{pod}} log records"},
			{`sum by (pod) (rate(otelcol_exporter_sent_metric_points{` + backend + `}[$__rate_interval]))`, "{{pod}} metric points"},
		}},
	{title: "Failed per second", unit: "ops",
		queries: []query{
			{`sum by (pod) (rate(otelcol_exporter_send_failed_log_records{` + backend + `}[$__rate_interval]))`, "{{pod}} log records"},
			{`sum by (pod) (rate(otelcol_exporter_send_failed_metric_points{` + backend + `}[$__rate_interval]))`, "{{pod}} metric points"},
		}},
	{title: "Queue, bytes", unit: "bytes",
		queries: []query{
			{`max by (pod) (otelcol_exporter_queue_size{` + backend + `})`, "{{pod}} queued"},
			{`max(otelcol_exporter_queue_capacity{` + backend + `})`, "bound"},
		}},
	{title: "Oldest queued item's age", unit: "s",
		description: "How late this backend's data is on each relay.",
		queries: []query{
			{`max by (pod, data_type) (otelcol_queue_storage_oldest_item_age{` + backend + `})`, "{{pod}} {{data_type}}"},
		}},
}

// build returns the dashboards, each as indented JSON.
func build() ([]File, error) {
	var out []File
	for _, d := range []struct {
		file, uid, title, description string
		panels                        []panel
		variables                     []cog.Builder[dashboard.VariableModel]
	}{
		{"otelcol-relay-overview.json", "otelcol-relay-overview", "otelcol-relay: pipeline",
			"Every hop of the log pipeline: fluent-bit, the node agents, the relays, the backends, and federation.",
			overview, nil},
		{"otelcol-relay-backend.json", "otelcol-relay-backend", "otelcol-relay: backend",
			"One backend's exporter on every relay: what it sent, what failed, and its persistent queue.",
			perBackend, []cog.Builder[dashboard.VariableModel]{variable("exporter", "Backend exporter",
				`label_values(otelcol_exporter_queue_capacity{job=~"otelcol-relay.*"}, exporter)`)}},
	} {
		// The classic dashboard JSON, which the dashboard sidecar provisions into every
		// Grafana the charts ship; the SDK's preferred v2 schema is for Grafana 12's
		// new dashboard API, behind a feature toggle.
		//nolint:staticcheck // the classic schema, on purpose (above)
		b := dashboard.NewDashboardBuilder(d.title).
			Uid(d.uid).
			Description(d.description).
			Tags([]string{"otelcol-relay"}).
			Editable().
			Refresh("30s").
			Time("now-1h", "now").
			Timezone(common.TimeZoneBrowser).
			WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")).
			WithVariable(variable("namespace", "Relay namespace", `label_values(otelcol_process_uptime{job=~"otelcol-relay.*"}, namespace)`))
		for _, v := range d.variables {
			b.WithVariable(v)
		}
		for _, p := range d.panels {
			b.WithPanel(p.build())
		}
		built, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", d.uid, err)
		}
		raw, err := json.MarshalIndent(built, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", d.uid, err)
		}
		out = append(out, File{Name: d.file, JSON: append(raw, '\n')})
	}
	return out, nil
}

var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

func variable(name, label, q string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Multi(true).
		IncludeAll(true).
		AllValue(".*")
}

func (p panel) build() cog.Builder[dashboard.Panel] {
	if p.stat {
		b := stat.NewPanelBuilder().Title(p.title).Description(p.description).Unit(p.unit).
			Datasource(datasource).Height(8).Span(12).
			GraphMode(common.BigValueGraphModeNone).
			ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
		for i, q := range p.queries {
			b.WithTarget(q.target(i))
		}
		return b
	}
	b := timeseries.NewPanelBuilder().Title(p.title).Description(p.description).Unit(p.unit).
		Datasource(datasource).Height(8).Span(12).Min(0)
	for i, q := range p.queries {
		b.WithTarget(q.target(i))
	}
	return b
}

func (q query) target(i int) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		RefId(string(rune('A' + i))).
		Datasource(datasource).
		Expr(q.expr).
		LegendFormat(q.legend)
}
