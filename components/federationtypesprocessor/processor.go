package federationtypesprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// federationTypes restores the metric types that Prometheus federation loses.
type federationTypes struct {
	cfg     *Config
	set     component.TelemetrySettings
	logger  *zap.Logger
	now     func() time.Time
	started time.Time

	// meta is the last metadata that was read successfully; nil until then, and
	// while it is nil every batch passes through untouched.
	meta atomic.Pointer[metadataSnapshot]

	fetcher *fetcher
	tel     *telemetry

	// mu guards the series cache and the hashers: batches from several
	// receivers may arrive concurrently.
	mu     sync.Mutex
	cache  *seriesCache
	h1, h2 maphash.Hash

	cancel context.CancelFunc
	done   chan struct{}
}

func newFederationTypes(cfg *Config, set component.TelemetrySettings) (*federationTypes, error) {
	p := &federationTypes{
		cfg:    cfg,
		set:    set,
		logger: set.Logger,
		now:    time.Now,
		cache:  newSeriesCache(cfg.SeriesCache.MaxSeries, cfg.SeriesCache.TTL),
	}
	p.started = p.now()
	seed1, seed2 := maphash.MakeSeed(), maphash.MakeSeed()
	p.h1.SetSeed(seed1)
	p.h2.SetSeed(seed2)
	tel, err := newTelemetry(set, observed{
		metadataAgeSeconds: func() (float64, bool) {
			since := p.started
			if s := p.meta.Load(); s != nil {
				since = s.fetched
			}
			return p.now().Sub(since).Seconds(), true
		},
		ambiguous: func() (int64, bool) {
			if s := p.meta.Load(); s != nil {
				return int64(len(s.ambiguous)), true
			}
			return 0, false
		},
		families: func() (int64, bool) {
			if s := p.meta.Load(); s != nil {
				return int64(len(s.families)), true
			}
			return 0, false
		},
		series: func() int64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			return int64(p.cache.len())
		},
	})
	if err != nil {
		return nil, fmt.Errorf("federation_types telemetry: %w", err)
	}
	p.tel = tel
	return p, nil
}

// start builds the HTTP client, reads the metadata once before the pipeline
// receives anything (processors start before receivers, so the first scrape is
// already typed), then refreshes it in the background. A failed first read
// is logged and never fails the collector: data then passes through unchanged.
func (p *federationTypes) start(ctx context.Context, host component.Host) error {
	client, err := p.cfg.ToClient(ctx, host.GetExtensions(), p.set)
	if err != nil {
		return fmt.Errorf("federation_types: metadata HTTP client: %w", err)
	}
	client.CheckRedirect = sameOriginRedirectsOnly
	p.fetcher = &fetcher{
		client:    client,
		url:       p.cfg.metadataURL(),
		tokenFile: p.cfg.BearerTokenFile,
		timeout:   p.cfg.Timeout,
		maxBytes:  p.cfg.MaxResponseSize,
	}
	bg, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done = make(chan struct{})
	p.refresh(ctx)
	go p.refreshLoop(bg)
	return nil
}

func (p *federationTypes) shutdown(context.Context) error {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
	p.tel.shutdown()
	return nil
}

func (p *federationTypes) refreshLoop(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.refresh(ctx)
		}
	}
}

// refresh logs exactly once per attempt that fails, so a long outage is visible
// without flooding the log.
func (p *federationTypes) refresh(ctx context.Context) {
	s, err := p.fetcher.fetch(ctx, p.now())
	if err != nil {
		p.tel.ProcessorFederationTypesMetadataRefreshFailures.Add(ctx, 1)
		if old := p.meta.Load(); old != nil {
			p.logger.Warn("Metric metadata refresh failed; keeping the metadata read earlier",
				zap.Duration("metadata_age", p.now().Sub(old.fetched).Round(time.Second)),
				zap.Duration("next_attempt_in", p.cfg.RefreshInterval), zap.Error(err))
		} else {
			p.logger.Warn("Metric metadata unavailable; federated metrics pass through unchanged (as gauges) until it can be read",
				zap.Duration("next_attempt_in", p.cfg.RefreshInterval), zap.Error(err))
		}
		return
	}
	old := p.meta.Swap(s)
	fields := []zap.Field{zap.Int("families", len(s.families)), zap.Int("ambiguous_families", len(s.ambiguous))}
	if len(s.ambiguous) > 0 {
		fields = append(fields, zap.Strings("ambiguous_sample", s.ambiguous[:min(len(s.ambiguous), 10)]))
	}
	if old == nil || len(old.ambiguous) != len(s.ambiguous) {
		p.logger.Info("Metric metadata loaded", fields...)
	} else {
		p.logger.Debug("Metric metadata refreshed", fields...)
	}
}

type retypeStats struct {
	counters, histograms, summaries int64
}

func (p *federationTypes) processMetrics(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	snap := p.meta.Load()
	if snap == nil {
		return md, nil
	}
	var st retypeStats
	now := p.now()
	p.mu.Lock()
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		resHash := p.hashAttrs(rm.Resource().Attributes(), "")
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			base := p.scopeKey(resHash, sm.Scope())
			p.retypeScope(sm.Metrics(), snap, base, now, &st)
		}
	}
	p.cache.expire(now)
	p.mu.Unlock()
	p.tel.recordRetyped(ctx, st.counters, st.histograms, st.summaries)
	return md, nil
}

// member is one gauge metric that is part of a histogram or summary family.
type member struct {
	idx  int
	role role
}

type familyAcc struct {
	name    string
	meta    familyMeta
	members []member
}

func (p *federationTypes) retypeScope(ms pmetric.MetricSlice, snap *metadataSnapshot, base seriesKey, now time.Time, st *retypeStats) {
	n := ms.Len()
	var fams map[string]*familyAcc
	var order []*familyAcc
	for i := range n {
		m := ms.At(i)
		if m.Type() != pmetric.MetricTypeGauge {
			continue
		}
		r, fam, meta := snap.lookup(m.Name())
		switch r {
		case roleNone, roleAmbiguous:
		case roleGauge:
			describe(m, meta)
		case roleCounter:
			p.toSum(m, meta, base, now)
			st.counters++
		default:
			if fams == nil {
				fams = make(map[string]*familyAcc)
			}
			f := fams[fam]
			if f == nil {
				f = &familyAcc{name: fam, meta: meta}
				fams[fam] = f
				order = append(order, f)
			}
			f.members = append(f.members, member{idx: i, role: r})
		}
	}
	if len(order) == 0 {
		return
	}
	emptied := make([]bool, n)
	for _, f := range order {
		if p.mergeFamily(ms, f, base, now, emptied) {
			if f.meta.typ == typeHistogram {
				st.histograms++
			} else {
				st.summaries++
			}
		}
	}
	idx := 0
	ms.RemoveIf(func(pmetric.Metric) bool {
		i := idx
		idx++
		return i < n && emptied[i]
	})
}

// describe fills in what federation dropped, without overwriting anything a
// pipeline stage before us set.
func describe(m pmetric.Metric, meta familyMeta) {
	if m.Description() == "" && meta.help != "" {
		m.SetDescription(meta.help)
	}
	if m.Unit() == "" && meta.unit != "" {
		m.SetUnit(meta.unit)
	}
}

func numberValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// toSum turns a counter's gauge into a monotonic cumulative Sum in place and
// gives every point its series' start time.
func (p *federationTypes) toSum(m pmetric.Metric, meta familyMeta, base seriesKey, now time.Time) {
	points := pmetric.NewNumberDataPointSlice()
	m.Gauge().DataPoints().MoveAndAppendTo(points)
	sum := m.SetEmptySum()
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	sum.SetIsMonotonic(true)
	points.MoveAndAppendTo(sum.DataPoints())
	describe(m, meta)
	dps := sum.DataPoints()
	for i := range dps.Len() {
		dp := dps.At(i)
		key := p.seriesKey(base, m.Name(), p.hashAttrs(dp.Attributes(), ""))
		if dp.Flags().NoRecordedValue() {
			if start, ok := p.cache.startOf(key); ok {
				dp.SetStartTimestamp(start)
			}
			p.cache.forget(key)
			continue
		}
		dp.SetStartTimestamp(p.cache.observe(key, dp.Timestamp(), numberValue(dp), now))
	}
}

type bucket struct {
	le  float64
	cum float64
}

type quantile struct {
	q, v float64
}

type pointRef struct {
	member int // index into familyAcc.members
	point  int
}

// group collects the series of one histogram or summary data point: same
// attributes (apart from le/quantile) and same timestamp, so they come from one
// scrape of one target.
type group struct {
	ts        pcommon.Timestamp
	attrHash  seriesKey
	attrsFrom pmetric.NumberDataPoint
	refs      []pointRef
	buckets   []bucket
	quantiles []quantile
	sum       float64
	count     float64
	hasSum    bool
	hasCount  bool
	stale     int
	bad       string // why the group cannot be converted, or ""
}

type groupKey struct {
	attrs seriesKey
	ts    pcommon.Timestamp
}

// mergeFamily replaces the _bucket/_sum/_count (or quantile/_sum/_count) gauges
// of one family by one Histogram (or Summary) metric. Points that do not form a
// complete, consistent data point stay where they were, as gauges: the
// processor never invents or drops data. It reports whether anything was
// converted and marks member metrics it emptied.
func (p *federationTypes) mergeFamily(ms pmetric.MetricSlice, f *familyAcc, base seriesKey, now time.Time, emptied []bool) bool {
	excl := "le"
	if f.meta.typ == typeSummary {
		excl = "quantile"
	}
	groups := make(map[groupKey]*group)
	var order []*group
	for mi, mem := range f.members {
		dps := ms.At(mem.idx).Gauge().DataPoints()
		for pi := range dps.Len() {
			dp := dps.At(pi)
			ah := p.hashAttrs(dp.Attributes(), excl)
			k := groupKey{attrs: ah, ts: dp.Timestamp()}
			g := groups[k]
			if g == nil {
				g = &group{ts: dp.Timestamp(), attrHash: ah, attrsFrom: dp}
				groups[k] = g
				order = append(order, g)
			}
			g.refs = append(g.refs, pointRef{member: mi, point: pi})
			if dp.Flags().NoRecordedValue() {
				g.stale++
			}
			v := numberValue(dp)
			switch mem.role {
			case roleBucket:
				le, ok := floatAttr(dp.Attributes(), "le")
				if !ok {
					g.bad = "bucket without a numeric le"
					continue
				}
				g.buckets = append(g.buckets, bucket{le: le, cum: v})
			case roleQuantile:
				q, ok := floatAttr(dp.Attributes(), "quantile")
				if !ok || q < 0 || q > 1 {
					g.bad = "quantile series without a quantile in [0,1]"
					continue
				}
				g.quantiles = append(g.quantiles, quantile{q: q, v: v})
			case roleSum:
				if g.hasSum {
					g.bad = "two _sum samples"
				}
				g.sum, g.hasSum = v, true
			case roleCount:
				if g.hasCount {
					g.bad = "two _count samples"
				}
				g.count, g.hasCount = v, true
			}
		}
	}

	out := pmetric.NewMetric()
	out.SetName(f.name)
	describe(out, f.meta)
	var hdps pmetric.HistogramDataPointSlice
	var sdps pmetric.SummaryDataPointSlice
	if f.meta.typ == typeHistogram {
		h := out.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		hdps = h.DataPoints()
	} else {
		sdps = out.SetEmptySummary().DataPoints()
	}
	consumed := make([][]bool, len(f.members))
	converted := 0
	for _, g := range order {
		var ok bool
		if f.meta.typ == typeHistogram {
			ok = p.appendHistogramPoint(hdps, g, ms, f, base, now, excl)
		} else {
			ok = p.appendSummaryPoint(sdps, g, f, base, now, excl)
		}
		if !ok {
			if p.logger.Core().Enabled(zap.DebugLevel) {
				p.logger.Debug("Series left as gauges: they do not form one data point",
					zap.String("family", f.name), zap.String("type", f.meta.typ.String()), zap.String("reason", g.bad))
			}
			continue
		}
		converted++
		for _, r := range g.refs {
			if consumed[r.member] == nil {
				consumed[r.member] = make([]bool, ms.At(f.members[r.member].idx).Gauge().DataPoints().Len())
			}
			consumed[r.member][r.point] = true
		}
	}
	if converted == 0 {
		return false
	}
	for mi, c := range consumed {
		if c == nil {
			continue
		}
		dps := ms.At(f.members[mi].idx).Gauge().DataPoints()
		i := 0
		dps.RemoveIf(func(pmetric.NumberDataPoint) bool {
			drop := c[i]
			i++
			return drop
		})
		if dps.Len() == 0 {
			emptied[f.members[mi].idx] = true
		}
	}
	out.MoveTo(ms.AppendEmpty())
	return true
}

func floatAttr(m pcommon.Map, key string) (float64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.AsString(), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func copyAttrsExcept(from, to pcommon.Map, excl string) {
	to.EnsureCapacity(from.Len())
	from.Range(func(k string, v pcommon.Value) bool {
		if k != excl {
			v.CopyTo(to.PutEmpty(k))
		}
		return true
	})
}

// appendHistogramPoint de-cumulates the buckets of g into a Histogram point.
func (p *federationTypes) appendHistogramPoint(dps pmetric.HistogramDataPointSlice, g *group, ms pmetric.MetricSlice, f *familyAcc, base seriesKey, now time.Time, excl string) bool {
	if g.bad != "" {
		return false
	}
	if g.stale > 0 && g.stale < len(g.refs) {
		g.bad = "some series of the data point are stale and some not"
		return false
	}
	if !sortDistinct(g.buckets, func(b bucket) float64 { return b.le }) {
		g.bad = "two buckets with the same le"
		return false
	}
	hasInf := len(g.buckets) > 0 && math.IsInf(g.buckets[len(g.buckets)-1].le, 1)
	bounds := make([]float64, 0, len(g.buckets))
	for _, b := range g.buckets {
		if !math.IsInf(b.le, 1) {
			bounds = append(bounds, b.le)
		}
	}
	key := p.seriesKey(base, f.name, g.attrHash)
	if g.stale > 0 {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(g.ts)
		if start, ok := p.cache.startOf(key); ok {
			dp.SetStartTimestamp(start)
		}
		p.cache.forget(key)
		dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		dp.ExplicitBounds().FromRaw(bounds)
		dp.BucketCounts().FromRaw(make([]uint64, len(bounds)+1))
		copyAttrsExcept(g.attrsFrom.Attributes(), dp.Attributes(), excl)
		return true
	}
	if !hasInf && !g.hasCount {
		g.bad = "neither a +Inf bucket nor a _count"
		return false
	}
	cums := make([]float64, 0, len(bounds)+1)
	for _, b := range g.buckets {
		cums = append(cums, b.cum)
	}
	if !hasInf {
		cums = append(cums, g.count)
	}
	counts := make([]uint64, len(cums))
	var prev uint64
	for i, c := range cums {
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			g.bad = "a bucket count that is not a finite non-negative number"
			return false
		}
		r := uint64(math.Round(c))
		if r < prev {
			g.bad = "bucket counts that decrease with le"
			return false
		}
		counts[i] = r - prev
		prev = r
	}
	if g.hasCount && hasInf && math.Round(g.count) != float64(prev) {
		g.bad = "_count differs from the +Inf bucket"
		return false
	}
	dp := dps.AppendEmpty()
	dp.SetTimestamp(g.ts)
	dp.SetStartTimestamp(p.cache.observe(key, g.ts, float64(prev), now))
	dp.SetCount(prev)
	if g.hasSum {
		dp.SetSum(g.sum)
	}
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	copyAttrsExcept(g.attrsFrom.Attributes(), dp.Attributes(), excl)
	for _, r := range g.refs {
		src := ms.At(f.members[r.member].idx).Gauge().DataPoints().At(r.point)
		if src.Exemplars().Len() > 0 {
			src.Exemplars().MoveAndAppendTo(dp.Exemplars())
		}
	}
	return true
}

// appendSummaryPoint turns the quantile, _sum and _count series of g into a
// Summary point.
func (p *federationTypes) appendSummaryPoint(dps pmetric.SummaryDataPointSlice, g *group, f *familyAcc, base seriesKey, now time.Time, excl string) bool {
	if g.bad != "" {
		return false
	}
	if g.stale > 0 && g.stale < len(g.refs) {
		g.bad = "some series of the data point are stale and some not"
		return false
	}
	key := p.seriesKey(base, f.name, g.attrHash)
	if g.stale > 0 {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(g.ts)
		if start, ok := p.cache.startOf(key); ok {
			dp.SetStartTimestamp(start)
		}
		p.cache.forget(key)
		dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		copyAttrsExcept(g.attrsFrom.Attributes(), dp.Attributes(), excl)
		return true
	}
	if !g.hasCount || !g.hasSum {
		g.bad = "a summary needs both _sum and _count"
		return false
	}
	if math.IsNaN(g.count) || math.IsInf(g.count, 0) || g.count < 0 {
		g.bad = "_count is not a finite non-negative number"
		return false
	}
	if !sortDistinct(g.quantiles, func(q quantile) float64 { return q.q }) {
		g.bad = "two series with the same quantile"
		return false
	}
	count := uint64(math.Round(g.count))
	dp := dps.AppendEmpty()
	dp.SetTimestamp(g.ts)
	dp.SetStartTimestamp(p.cache.observe(key, g.ts, float64(count), now))
	dp.SetCount(count)
	dp.SetSum(g.sum)
	qs := dp.QuantileValues()
	qs.EnsureCapacity(len(g.quantiles))
	for _, q := range g.quantiles {
		qv := qs.AppendEmpty()
		qv.SetQuantile(q.q)
		qv.SetValue(q.v)
	}
	copyAttrsExcept(g.attrsFrom.Attributes(), dp.Attributes(), excl)
	return true
}

// hashAttrs hashes a map independently of its order (the sum of per-entry
// hashes), skipping the key excl. Callers hold p.mu.
func (p *federationTypes) hashAttrs(m pcommon.Map, excl string) seriesKey {
	var k seriesKey
	m.Range(func(key string, v pcommon.Value) bool {
		if key == excl {
			return true
		}
		var s string
		if v.Type() == pcommon.ValueTypeStr {
			s = v.Str()
		} else {
			s = v.AsString()
		}
		p.h1.Reset()
		p.h2.Reset()
		for _, h := range [2]*maphash.Hash{&p.h1, &p.h2} {
			_, _ = h.WriteString(key)
			_ = h.WriteByte(byte(v.Type()))
			_, _ = h.WriteString(s)
		}
		k[0] += p.h1.Sum64()
		k[1] += p.h2.Sum64()
		return true
	})
	return k
}

func (p *federationTypes) scopeKey(res seriesKey, scope pcommon.InstrumentationScope) seriesKey {
	return p.mix(res, scope.Name()+"\x00"+scope.Version(), seriesKey{})
}

func (p *federationTypes) seriesKey(base seriesKey, name string, attrs seriesKey) seriesKey {
	return p.mix(base, name, attrs)
}

func (p *federationTypes) mix(a seriesKey, s string, b seriesKey) seriesKey {
	var buf [32]byte
	binary.LittleEndian.PutUint64(buf[0:], a[0])
	binary.LittleEndian.PutUint64(buf[8:], a[1])
	binary.LittleEndian.PutUint64(buf[16:], b[0])
	binary.LittleEndian.PutUint64(buf[24:], b[1])
	p.h1.Reset()
	p.h2.Reset()
	var k seriesKey
	for i, h := range [2]*maphash.Hash{&p.h1, &p.h2} {
		_, _ = h.Write(buf[:])
		_, _ = h.WriteString(s)
		k[i] = h.Sum64()
	}
	return k
}

// sortDistinct sorts xs by key and reports whether no two keys are equal: the
// bounds of a histogram and the quantiles of a summary must each be distinct.
func sortDistinct[T any](xs []T, key func(T) float64) bool {
	slices.SortFunc(xs, func(a, b T) int {
		switch ka, kb := key(a), key(b); {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	for i := 1; i < len(xs); i++ {
		if key(xs[i]) == key(xs[i-1]) {
			return false
		}
	}
	return true
}
