// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// The recipes of docs/recipes.md, each run as written (config/recipes/*.yaml)
// over gateway.yaml on the built binary, against real TLS backends.

// line is one log record as deploy/fluent-bit sends it: a string body, pod
// identity as record attributes, a sequence number to count it by.
type line struct {
	seq       int64
	namespace string
	body      string
	severity  plog.SeverityNumber
	attrs     map[string]string
}

// fluentBitRecords builds one request of fluent-bit-shaped records; each pod is
// named after its namespace.
func fluentBitRecords(lines []line) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, l := range lines {
		lr := lrs.AppendEmpty()
		lr.Body().SetStr(l.body)
		lr.SetSeverityNumber(l.severity)
		a := lr.Attributes()
		a.PutInt(otlpfixture.SeqAttr, l.seq)
		a.PutStr("k8s.namespace.name", l.namespace)
		a.PutStr("k8s.pod.name", l.namespace+"-app-0")
		a.PutStr("k8s.container.name", "app")
		for k, v := range l.attrs {
			a.PutStr(k, v)
		}
	}
	return ld
}

// recipeGateway runs gateway.yaml with plaintext receivers (the subject is the
// pipeline after them) and a recipe, with the append merge the StatefulSet uses.
func recipeGateway(t *testing.T, def *tlsBackend, recipe string, env ...string) (*e2e.Collector, *e2e.HTTPClient, []string, []string) {
	t.Helper()
	g := newGatewayEnv(t, def, nil)
	env = append(slices.Clone(g.env), append([]string{
		"RELAY_BACKEND_QUEUE_BYTES=16777216", "OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=16777216",
	}, env...)...)
	args := []string{
		"--config", gatewayConfig("gateway.yaml"), "--config", gatewayConfig("receiver-plaintext.yaml"),
		"--config", gatewayConfig(filepath.Join("recipes", recipe)),
		"--feature-gates=confmap.enableMergeAppendOption",
	}
	col := e2e.Start(t, "", e2e.Options{Env: env, Args: args, ReadyTimeout: 90 * time.Second})
	return col, e2e.NewHTTPClient("http://"+g.httpAddr, nil), env, args
}

func send(t *testing.T, c *e2e.HTTPClient, lines []line) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.SendLogs(ctx, fluentBitRecords(lines), otlpfixture.Encoding{Gzip: true}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// eachRecord calls f for every log record a sink holds, with its resource.
func eachRecord(s *otlpfixture.Sink, f func(res pcommon.Resource, lr plog.LogRecord)) {
	for _, ld := range s.Logs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					f(rl.Resource(), lrs.At(k))
				}
			}
		}
	}
}

func seqOf(lr plog.LogRecord) int64 {
	v, _ := lr.Attributes().Get(otlpfixture.SeqAttr)
	return v.Int()
}

// received maps seq to the records a sink holds with that seq.
func received(s *otlpfixture.Sink) map[int64][]plog.LogRecord {
	out := map[int64][]plog.LogRecord{}
	eachRecord(s, func(_ pcommon.Resource, lr plog.LogRecord) {
		out[seqOf(lr)] = append(out[seqOf(lr)], lr)
	})
	return out
}

// namespacesOf maps seq to the resource namespace each record arrived under.
func namespacesOf(s *otlpfixture.Sink) map[int64]string {
	out := map[int64]string{}
	eachRecord(s, func(res pcommon.Resource, lr plog.LogRecord) {
		ns, _ := res.Attributes().Get("k8s.namespace.name")
		out[seqOf(lr)] = ns.Str()
	})
	return out
}

// expectSeqs fails unless the sink holds exactly want, once each, after
// waiting for them and a settling second for anything that should not come.
func expectSeqs(t *testing.T, name string, s *otlpfixture.Sink, want []int64) map[int64][]plog.LogRecord {
	t.Helper()
	s.WaitForLogRecords(t, len(want), time.Minute)
	time.Sleep(2 * time.Second)
	got := received(s)
	for _, seq := range want {
		if len(got[seq]) != 1 {
			t.Errorf("%s: seq %d arrived %d times, want once", name, seq, len(got[seq]))
		}
	}
	for seq := range got {
		if !slices.Contains(want, seq) {
			t.Errorf("%s: seq %d arrived, and is not for this backend", name, seq)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%s: %d records, as routed", name, len(want))
	return got
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s < to; s++ {
		out = append(out, s)
	}
	return out
}

func TestRecipeDropNoise(t *testing.T) {
	def := newTLSBackend(t, "default")
	col, client, _, _ := recipeGateway(t, def, "drop-noise.yaml")
	var lines []line
	var kept []int64
	for i := int64(0); i < 300; i++ {
		l := line{seq: i, namespace: "payments", body: fmt.Sprintf("POST /api/orders 201 order=%d", i)}
		switch i % 3 {
		case 1:
			l.body = fmt.Sprintf(`10.1.2.3 - - "GET /healthz HTTP/1.1" 200 2 seq=%d`, i)
		case 2:
			if i%2 == 0 {
				l.severity = plog.SeverityNumberDebug
			} else {
				l.severity, kept = plog.SeverityNumberInfo, append(kept, i)
			}
		default:
			kept = append(kept, i)
		}
		lines = append(lines, l)
	}
	send(t, client, lines)
	expectSeqs(t, "default", def.sink, kept)
	// The gateway's own processors still ran before the filter: identity was
	// lifted from the records into the resource.
	for seq, ns := range namespacesOf(def.sink) {
		if ns != "payments" {
			t.Fatalf("default: seq %d arrived under namespace %q: the logs pipeline lost attributes_to_resource/pod", seq, ns)
		}
	}
	t.Logf("sent 300, kept %d, dropped %d (health checks and DEBUG)", len(kept), 300-len(kept))
	if code, err := col.Stop(60 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d, %v", code, err)
	}
}

// The vendor gets e-mail addresses and tokens masked; corp and the default
// backend get the same requests as they arrived.
func TestRecipeMaskForVendor(t *testing.T) {
	def, corp := newTLSBackend(t, "default"), newTLSBackend(t, "corp")
	public := newPublicRoots(t)
	datadog := public.sink(t)
	roots := public.file
	const apiKey = "dd-api-key-0b5e71"
	col, client, _, _ := recipeGateway(t, def, "mask-for-vendor.yaml",
		"SSL_CERT_FILE="+roots,
		"DATADOG_OTLP_ENDPOINT=https://"+datadog.HTTPAddr,
		"OTEL_EXPORTER_DATADOG_DD_API_KEY="+apiKey,
		"CORP_OTLP_ENDPOINT=https://"+corp.sink.GRPCAddr,
		"CORP_CA_FILE="+corp.caFile, "CORP_CERT_FILE="+corp.certFile, "CORP_KEY_FILE="+corp.keyFile,
	)
	const body = "login ok user=alice@example.com header=Authorization: Bearer eyJhbGciOi.abc-123"
	var lines []line
	for i := int64(0); i < 100; i++ {
		lines = append(lines, line{seq: i, namespace: "payments", body: body, attrs: map[string]string{"user.email": "bob@example.org", "route": "/login"}})
	}
	send(t, client, lines)
	all := seqRange(0, 100)
	for name, s := range map[string]*otlpfixture.Sink{"default": def.sink, "corp": corp.sink} {
		for seq, lrs := range expectSeqs(t, name, s, all) {
			email, _ := lrs[0].Attributes().Get("user.email")
			if lrs[0].Body().Str() != body || email.Str() != "bob@example.org" {
				t.Fatalf("%s: seq %d changed on its way: body %q, user.email %q", name, seq, lrs[0].Body().Str(), email.Str())
			}
		}
	}
	for seq, lrs := range expectSeqs(t, "datadog", datadog, all) {
		b := lrs[0].Body().Str()
		email, _ := lrs[0].Attributes().Get("user.email")
		route, _ := lrs[0].Attributes().Get("route")
		if strings.Contains(b, "alice@") || strings.Contains(b, "eyJhbGciOi") || !strings.Contains(b, "user=<email>") || !strings.Contains(b, "Bearer <token>") {
			t.Fatalf("datadog: seq %d body not masked: %q", seq, b)
		}
		if strings.Contains(email.Str(), "bob@") || route.Str() != "/login" {
			t.Fatalf("datadog: seq %d attributes: user.email %q (want masked), route %q (want kept)", seq, email.Str(), route.Str())
		}
	}
	for _, r := range datadog.Requests() {
		if r.Header.Get("DD-API-KEY") != apiKey {
			t.Fatalf("datadog: request without its API key")
		}
	}
	t.Logf("datadog: body %q", received(datadog)[0][0].Body().Str())
	if code, err := col.Stop(60 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d, %v", code, err)
	}
	if strings.Contains(col.Output(), apiKey) {
		t.Fatal("the API key reached the collector's output")
	}
}

// projectedToken writes a token the way the kubelet writes a projected or
// Secret volume: the file is a symlink through ..data to a timestamped
// directory, and an update swaps ..data atomically and removes the old one.
type projectedToken struct {
	dir string
	gen int
}

func (p *projectedToken) path() string { return filepath.Join(p.dir, "token") }

func (p *projectedToken) write(t *testing.T, token string) {
	t.Helper()
	p.gen++
	ts := fmt.Sprintf("..2026_12_07_00_00_0%d.%d", p.gen, p.gen)
	if err := os.Mkdir(filepath.Join(p.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ts, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old, _ := os.Readlink(filepath.Join(p.dir, "..data"))
	tmp := filepath.Join(p.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(p.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p.path()); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", "token"), p.path()); err != nil {
			t.Fatal(err)
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(p.dir, old)); err != nil {
			t.Fatal(err)
		}
	}
}

// Namespace team-a to its vendor with a bearer token from a projected file,
// rotated mid-test; team-b and ingress to Grafana with basic auth from a
// Secret-mounted file; everything to the default backend. A record whose
// resource already names a pod in team-a keeps that identity whatever its
// record attributes claim.
func TestRecipeRouteByNamespace(t *testing.T) {
	def := newTLSBackend(t, "default")
	public := newPublicRoots(t)
	teamA, grafana := public.sink(t), public.sink(t)
	roots := public.file
	token := &projectedToken{dir: t.TempDir()}
	token.write(t, "team-a-token-1")
	grafanaToken := &projectedToken{dir: t.TempDir()}
	grafanaToken.write(t, "glc_grafana-token-9")

	col, client, env, args := recipeGateway(t, def, "route-by-namespace.yaml",
		"SSL_CERT_FILE="+roots,
		"TEAM_A_OTLP_ENDPOINT=https://"+teamA.HTTPAddr, "TEAM_A_TOKEN_FILE="+token.path(),
		"GRAFANA_OTLP_ENDPOINT=https://"+grafana.HTTPAddr, "GRAFANA_INSTANCE_ID=123456",
		"GRAFANA_TOKEN_FILE="+grafanaToken.path(),
	)
	namespaces := []string{"team-a", "team-b", "ingress", "other"}
	batch := func(from int64) []line {
		var lines []line
		for i := int64(0); i < 200; i++ {
			lines = append(lines, line{seq: from + i, namespace: namespaces[i%4], body: "request served"})
		}
		return lines
	}
	send(t, client, batch(0))

	// A request whose resource names its pod (as the agent sets it from the
	// connection), with records claiming team-b: it stays team-a's.
	spoof := fluentBitRecords([]line{{seq: 1000, namespace: "team-b", body: "claims team-b"}, {seq: 1001, namespace: "team-b", body: "claims team-b"}})
	res := spoof.ResourceLogs().At(0).Resource().Attributes()
	res.PutStr("k8s.namespace.name", "team-a")
	res.PutStr("k8s.pod.name", "team-a-app-0")
	res.PutStr("k8s.pod.uid", "0d9c1f6e-7a4b-4c2e-9f1a-2b3c4d5e6f70")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := client.SendLogs(ctx, spoof, otlpfixture.Encoding{}); err != nil {
		t.Fatal(err)
	}

	// Only then rotate team-a's token; the next batch must carry the new one.
	teamA.WaitForLogRecords(t, 52, time.Minute)
	token.write(t, "team-a-token-2")
	if err := col.WaitForOutput("refresh token", 30*time.Second); err != nil {
		t.Fatalf("bearertokenauth did not re-read the rotated token file: %v", err)
	}
	send(t, client, batch(200))

	var wantA, wantGrafana []int64
	for s := int64(0); s < 400; s++ {
		switch namespaces[s%200%4] {
		case "team-a":
			wantA = append(wantA, s)
		case "team-b", "ingress":
			wantGrafana = append(wantGrafana, s)
		}
	}
	wantA = append(wantA, 1000, 1001)
	expectSeqs(t, "team-a", teamA, wantA)
	expectSeqs(t, "grafana", grafana, wantGrafana)
	expectSeqs(t, "default", def.sink, append(seqRange(0, 400), 1000, 1001))
	for seq, ns := range namespacesOf(teamA) {
		if ns != "team-a" {
			t.Fatalf("team-a: seq %d arrived under namespace %q", seq, ns)
		}
	}

	// Each request carried the token current when it was sent, and the basic
	// credentials from the files.
	var tokens []string
	for _, r := range teamA.Requests() {
		if tok := r.Header.Get("Authorization"); !slices.Contains(tokens, tok) {
			tokens = append(tokens, tok)
		}
	}
	if !slices.Equal(tokens, []string{"Bearer team-a-token-1", "Bearer team-a-token-2"}) {
		t.Fatalf("team-a: Authorization values %q, want the first token, then the rotated one", tokens)
	}
	wantBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte("123456:glc_grafana-token-9"))
	for _, r := range grafana.Requests() {
		if r.Header.Get("Authorization") != wantBasic {
			t.Fatalf("grafana: Authorization is not basic auth from the files")
		}
	}
	for _, r := range def.sink.Requests() {
		if r.Header.Get("Authorization") != defaultSecret {
			t.Fatal("default: another backend's credentials")
		}
	}
	t.Logf("team-a %d records (tokens 1 then 2), grafana %d, default %d", len(wantA), len(wantGrafana), 402)

	rendered, code := e2e.Run(t, time.Minute, env, append([]string{"print-config"}, args...)...)
	if code != 0 {
		t.Fatalf("print-config exited %d:\n%s", code, rendered)
	}
	if code, err := col.Stop(60 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d, %v", code, err)
	}
	for _, leak := range []string{"team-a-token-1", "team-a-token-2", "glc_grafana-token-9"} {
		if strings.Contains(col.Output(), leak) || strings.Contains(rendered, leak) {
			t.Fatalf("a token reached the collector's output or print-config")
		}
	}
}

// A typo in a route or an auth literal is refused at validate, naming the entry.
func TestRecipeRefusals(t *testing.T) {
	def := newTLSBackend(t, "default")
	g := newGatewayEnv(t, def, nil)
	for name, tc := range map[string]struct{ doc, want string }{
		"route typo": {"backends: [{name: vendor, endpoint: \"https://v.example\", route: {namespace: [a]}}]",
			`backends[0] (vendor): route: unknown field "namespace"`},
		"literal token": {"backends: [{name: vendor, endpoint: \"https://v.example\", auth: {bearer_token: {token: abc-literal-token}}}]",
			"backends[0] (vendor)::auth::bearer_token::token is a credential written as a literal value (value not shown)"},
		"env in a filter": {"processors: {filter/x: {logs: {log_record: ['body == \"${env:OTEL_EXPORTER_DEFAULT_AUTHORIZATION}\"']}}}",
			"processors::filter/x::logs::log_record[0] reads ${env:OTEL_EXPORTER_DEFAULT_AUTHORIZATION}"},
		"unknown processor": {"backends: [{name: vendor, endpoint: \"https://v.example\", processors: [redaction/typo]}]",
			`backends[0] (vendor): processors: "redaction/typo" is not in the top-level processors`},
	} {
		t.Run(name, func(t *testing.T) {
			out, code := e2e.Run(t, time.Minute, g.env, "validate", "--config", gatewayConfig("gateway.yaml"),
				"--config", gatewayConfig("receiver-plaintext.yaml"), "--config", e2e.WriteConfig(t, tc.doc))
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("validate: exit %d, want a refusal containing %q:\n%s", code, tc.want, out)
			}
			if strings.Contains(out, defaultSecret) || strings.Contains(out, "abc-literal-token") {
				t.Fatal("the refusal shows a secret")
			}
		})
	}
}
