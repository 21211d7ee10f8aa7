// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// alertFor is the longest `for` the fault test's Prometheus keeps: the shipped
// durations (minutes) are promtool's to test (components/alerts/rules_test.yaml),
// the expressions, thresholds and windows are as shipped.
const alertFor = 20 * time.Second

// TestAlertsFireOnFaults runs the pipeline under load with a real Prometheus that
// scrapes what the shipped monitors make of the install and evaluates the shipped
// rules, then makes real faults and waits for each one's alert to fire:
//
//   - healthy for healthyFor, with records through fluent-bit's path and an
//     application's through the node agent: no alert fires and the accounting
//     counts no loss;
//   - at once: the backend cut off (OtelcolRelayBackendStalled, then
//     OtelcolRelayDeliveryLagging as the oldest queued record ages), the node agent
//     replaced by a pod that cannot start (OtelcolRelayAgentDown), the relays'
//     backend client certificate replaced by one that expires in 3 days
//     (OtelcolRelayCertificateExpiringSoon, through certwatch's reload), and the
//     receivers' serving certificate by one that expires in 4 days (the same alert,
//     from certwatch/receivers);
//   - the agent back, then the backend refusing what it gets with 400 (a permanent
//     error: the relays drop it): OtelcolRelayExportFailing, and the accounting's
//     lost count for that backend is exactly the records the backend refused,
//     which are exactly the numbers the senders had acknowledged and the backend
//     never got;
//   - then every dashboard query answers with data, and the dashboards are drawn
//     over the whole run.
//
// A relay stopped with data on its volume is TestScaleInBackendDown's fault
// (OtelcolRelayDataLeftOnVolume). fluent-bit cannot run here: its alerts are
// promtool's. The test logs how long each alert took from its fault.
func TestAlertsFireOnFaults(t *testing.T) {
	p := install(t)
	pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")
	backend := func(path string) {
		t.Helper()
		if err := getJSON("http://"+backendIP+":8080"+path, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = getJSON("http://"+backendIP+":8080/down?on=false", nil)
		_ = getJSON("http://"+backendIP+":8080/reject?on=false", nil)
	})
	prom := startPrometheusFor(t, alertFor)
	start := time.Now()
	l := startLoad(t, "alerts", 100, 1)
	app := startApp(t, "alerts", "http://otelcol-relay-agent."+relayNS+".svc:4318/v1/logs", 20)

	// Healthy: nothing fires, nothing is lost.
	const healthyFor = 150 * time.Second
	healthyEnd := time.Now().Add(healthyFor)
	eventually(t, "the relays deliver both senders' records", readyBudget, func() string {
		for _, hop := range []string{"agent", "backend"} {
			if v, ok := prom.value(t, `sum(otelcol_relay:log_records:rate5m{hop="`+hop+`"})`); !ok || v == 0 {
				return fmt.Sprintf("%s rate %v", hop, v)
			}
		}
		return ""
	})
	// Firing, not pending: an expression may hold for one evaluation while
	// Prometheus has a single sample of a rate's counter (its first scrape of a
	// pod); `for` is there to ride that out, here cut to alertFor.
	pendingSeen := map[string]bool{}
	for time.Now().Before(healthyEnd) {
		for name, a := range prom.firing(t) {
			t.Fatalf("healthy under load, yet %s fires: %v", name, a)
		}
		for _, a := range prom.activeAlerts(t) {
			pendingSeen[a] = true
		}
		time.Sleep(2 * time.Second)
	}
	if len(pendingSeen) > 0 {
		t.Logf("pending for a while, never firing: %v", slices.Sorted(maps.Keys(pendingSeen)))
	}
	lost, err := prom.series(`otelcol_relay:log_records_lost:increase5m`)
	if err != nil || len(lost) == 0 {
		t.Fatalf("healthy: the accounting counts nothing (%v)", err)
	}
	if v, _ := prom.value(t, `sum(otelcol_relay:log_records_lost:increase5m)`); v != 0 {
		t.Errorf("healthy, yet the accounting counts records lost: %v", lost)
	}
	rates, _ := prom.series(`otelcol_relay:log_records:rate5m`)
	t.Logf("healthy under load for %s: no alert fired; per hop: %v; lost: %v", healthyFor, rates, lost)

	// The faults, together.
	faults := time.Now()
	backend("/down?on=true")
	restoreAgent := breakAgent(t)
	// A backend client certificate and a receivers' serving keypair about to
	// expire, each signed by the CA its peer trusts, so both still work.
	now := time.Now()
	replaceTLSSecret(t, p, "otelcol-relay-backend-default-tls", "client", p.backendCA.Client(t,
		testcerts.Options{CommonName: "otelcol-relay-expiring", NotAfter: now.Add(72 * time.Hour)}))
	replaceTLSSecret(t, p, "otelcol-relay-receiver-tls", "gw", p.ca.Peer(t, relayServing(now.Add(96*time.Hour))))
	waits := map[string]string{
		"OtelcolRelayBackendStalled":          "the backend cut off",
		"OtelcolRelayDeliveryLagging":         "the backend cut off",
		"OtelcolRelayAgentDown":               "the agent's pod replaced by one that cannot start",
		"OtelcolRelayCertificateExpiringSoon": "the backend client certificate replaced by one expiring in 3 days",
	}
	// The receivers' certificate fires the same alert, told apart by its role.
	const servingExpiring = "OtelcolRelayCertificateExpiringSoon{role=server}"
	waits[servingExpiring] = "the receivers' serving certificate replaced by one expiring in 4 days"
	fired := map[string]time.Duration{}
	eventually(t, "each fault's alert fires", 8*time.Minute, func() string {
		for _, a := range prom.mustAlerts(t) {
			name := a.Labels["alertname"]
			if name == "OtelcolRelayCertificateExpiringSoon" && a.Labels["role"] == "server" {
				name = servingExpiring
			}
			if _, ok := waits[name]; ok && a.State == "firing" && fired[name] == 0 {
				fired[name] = time.Since(faults)
				t.Logf("%s firing %s after %s (%v)", name, fired[name].Round(time.Second), waits[name], a.Labels)
			}
		}
		var missing []string
		for name := range waits {
			if fired[name] == 0 {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			return fmt.Sprintf("not firing yet: %v", missing)
		}
		return ""
	})
	restoreAgent()
	// The agent's new pod counts from zero, and the application's sends reach it
	// only once their retries (a 30 s timeout on a connection to the crashed pod,
	// then up to 5 s apart) give up on the old address: the dashboards' agent hop
	// is empty until it has accepted records over two scrapes.
	eventually(t, "the restored agent accepts the application's records", readyBudget, func() string {
		if v, ok := prom.value(t, `sum(rate(otelcol_receiver_accepted_log_records{job="otelcol-relay-agent"}[1m]))`); !ok || v == 0 {
			return fmt.Sprintf("agent rate %v", v)
		}
		return ""
	})

	// The backend answers again, with 400 to everything: what it refuses is lost,
	// and counted as lost.
	failedBefore, _ := prom.value(t, `sum(otelcol_exporter_send_failed_log_records{job="otelcol-relay"})`)
	rejected := time.Now()
	backend("/reject?on=true")
	backend("/down?on=false")
	eventually(t, "OtelcolRelayExportFailing fires", 3*time.Minute, func() string {
		if a, ok := prom.firing(t)["OtelcolRelayExportFailing"]; ok {
			t.Logf("OtelcolRelayExportFailing firing %s after the backend began answering 400 (%v)",
				time.Since(rejected).Round(time.Second), a)
			return ""
		}
		return "not firing yet"
	})
	backend("/reject?on=false")
	healed := time.Now()
	var refused struct {
		Records int64 `json:"refused_log_records"`
	}
	if err := getJSON("http://"+backendIP+":8080/reject", &refused); err != nil {
		t.Fatal(err)
	}
	if refused.Records == 0 {
		t.Fatal("the backend refused no record: the test made no loss")
	}
	eventually(t, "the relays count every refused record as failed, and the accounting as lost", time.Minute, func() string {
		after, _ := prom.value(t, `sum(otelcol_exporter_send_failed_log_records{job="otelcol-relay"})`)
		if got := int64(after - failedBefore); got != refused.Records {
			return fmt.Sprintf("send_failed rose by %d, the backend refused %d", got, refused.Records)
		}
		if v, _ := prom.value(t, `sum(otelcol_relay:log_records_lost:increase5m{hop="backend"})`); int64(v) != refused.Records {
			return fmt.Sprintf("otelcol_relay:log_records_lost:increase5m{hop=\"backend\"} is %v, the backend refused %d", v, refused.Records)
		}
		return ""
	})

	// The senders' view: what they had acknowledged and the backend never got is
	// what it refused.
	st := l.stop(t, "load")
	appSt := app.stop(t, "app")
	var sc seqCount
	var appMissing int64
	eventually(t, "the backend has every acknowledged number but those it refused", readyBudget, func() string {
		if err := getJSON(fmt.Sprintf("http://%s:8080/seq?run=%s&upto=%d", backendIP, l.run, st.Assigned), &sc); err != nil {
			return err.Error()
		}
		_, seen, err := backendAppRecords(backendIP, app.run)
		if err != nil {
			return err.Error()
		}
		appMissing = appSt.Acked - int64(len(seen))
		if got := int64(sc.Missing) + appMissing; got != refused.Records {
			return fmt.Sprintf("%d + %d missing, %d refused: %+v", sc.Missing, appMissing, refused.Records, sc)
		}
		return ""
	})
	t.Logf("load alerts: %d numbered and acknowledged, %d missing at the backend, %d duplicates; app alerts (through the agent): %d acknowledged, %d missing; the backend refused %d",
		st.Acked, sc.Missing, sc.Duplicates, appSt.Acked, appMissing, refused.Records)

	panels := shippedPanels(t, dashboardVars(t, prom))
	checkDashboardQueries(t, prom, panels)
	// What the dashboards showed through it all (DASHBOARD_PICTURES: where to
	// draw them; deploy/docs/pictures holds a run's).
	dir := os.Getenv("DASHBOARD_PICTURES")
	if dir == "" {
		dir = filepath.Join(repoRoot, "bin", "dashboard-pictures")
	}
	drawDashboards(t, prom, panels, start, time.Now(), map[string]time.Time{
		"faults made": faults, "backend answers 400": rejected, "backend healthy again": healed,
	}, dir)
}

// breakAgent replaces the agent's pod by one whose collector exits at start (its
// config file does not exist): the DaemonSet deletes the old pod, and the new
// one crash-loops with an address Prometheus scrapes in vain. The function it
// returns puts the agent back and waits for it (also done at the end).
func breakAgent(t *testing.T) func() {
	t.Helper()
	const arg, broken = "/spec/template/spec/containers/0/args/0", "--config=/etc/otelcol-relay/config/missing.yaml"
	was := strings.TrimSpace(mustKubectl(t, "", "-n", relayNS, "get", "daemonset", "otelcol-relay-agent", "-o", "jsonpath={.spec.template.spec.containers[0].args[0]}"))
	set := func(from, to string) {
		mustKubectl(t, "", "-n", relayNS, "patch", "daemonset", "otelcol-relay-agent", "--type=json", "-p",
			fmt.Sprintf(`[{"op":"test","path":%q,"value":%q},{"op":"replace","path":%q,"value":%q}]`, arg, from, arg, to))
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		set(broken, was)
		mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	}
	t.Cleanup(restore)
	set(was, broken)
	return restore
}

// replaceTLSSecret puts kp into the install's TLS Secret secret with the README's
// command, from files <name>.crt and <name>.key, and at the end puts back the
// install's own, the files of that name in p.dir.
func replaceTLSSecret(t *testing.T, p *pki, secret, name string, kp *testcerts.KeyPair) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, name+".crt"), kp.CertPEM)
	writeFile(t, filepath.Join(dir, name+".key"), kp.KeyPEM)
	apply := func(dir string) {
		sh(t, dir, []string{"NS=" + relayNS, "SECRET=" + secret, "NAME=" + name}, `
kubectl -n $NS create secret tls $SECRET --cert=$NAME.crt --key=$NAME.key --dry-run=client -o yaml | kubectl apply --server-side --force-conflicts -f -
`)
	}
	t.Cleanup(func() { apply(p.dir) })
	apply(dir)
}

// checkDashboardQueries runs every query of every shipped dashboard panel against
// prom, and fails on one that errors or returns nothing; it logs what each
// returned. The queries of hops this install has not got are named with the
// reason.
func checkDashboardQueries(t *testing.T, prom *prometheus, panels []dashboardPanel) {
	t.Helper()
	for _, panel := range panels {
		for _, q := range panel.queries {
			where := panel.dashboard + ": " + panel.title
			if why := notInThisInstall(q.expr); why != "" {
				t.Logf("%s: %s: not run: %s", where, q.expr, why)
				continue
			}
			series, err := prom.series(q.expr)
			switch {
			case err != nil:
				t.Errorf("%s: %s: %v", where, q.expr, err)
			case len(series) == 0:
				t.Errorf("%s: %s: no data", where, q.expr)
			default:
				t.Logf("%s: %s: %s", where, q.expr, strings.Join(series, ", "))
			}
		}
	}
}

// dashboardVars are the values Grafana's variables take for the install: its
// namespace and its (first) backend exporter.
func dashboardVars(t *testing.T, prom *prometheus) *strings.Replacer {
	t.Helper()
	exporters := prom.query(t, `group by (exporter) (otelcol_exporter_queue_capacity{job="otelcol-relay"})`)
	if len(exporters) == 0 {
		t.Fatal("no exporter queue in Prometheus")
	}
	return strings.NewReplacer("$__rate_interval", "1m", "$namespace", relayNS, "$exporter", exporters[0]["exporter"])
}

// notInThisInstall says why a dashboard query cannot have data on the test
// cluster, or "".
func notInThisInstall(expr string) string {
	switch {
	case strings.Contains(expr, "otelcol_processor_memory_limiter_refused_"), strings.Contains(expr, "otelcol_admission_refused_requests"):
		return "served once a refusal happened, which this test does not make (TestAlertRules makes both)"
	case strings.Contains(expr, "fluentbit_"):
		return "fluent-bit cannot run on these machines (its names are checked against its source: TestDashboardQueries)"
	case strings.Contains(expr, `job="otelcol-relay-federation"`):
		return "the aks install federates nothing (TestFederationFromInClusterPrometheus runs federation)"
	case strings.Contains(expr, "otelcol_admission_drain_queue_size"):
		return "served only while a relay drains (TestScaleInBackendDown's Prometheus alerts on it)"
	}
	return ""
}
