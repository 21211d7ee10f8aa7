// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
)

// federationTypes restores the metric types that Prometheus federation loses.
type federationTypes struct {
	cfg     *Config
	set     component.TelemetrySettings
	logger  *zap.Logger
	now     func() time.Time
	started time.Time
	// firstRetry is the wait after a failed first read (refreshLoop doubles it).
	firstRetry time.Duration

	// meta is the last metadata that was read successfully; nil until then, and
	// while it is nil every batch passes through untouched.
	meta atomic.Pointer[metadataSnapshot]

	fetcher *fetcher
	tel     *telemetry

	// cache is shared by batches, which may arrive concurrently from several
	// receivers; seeds make every batch's hashers agree on the series keys.
	cache *seriesCache
	seeds hashSeeds

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
		// A second, then doubling: a Prometheus that is only restarting answers
		// within a few attempts, one that is down is asked ~9 times in 5 minutes.
		firstRetry: time.Second,
	}
	p.started = p.now()
	p.seeds = newHashSeeds()
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
		series: func() int64 { return int64(p.cache.len()) },
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
	first := min(p.firstRetry, p.cfg.RefreshInterval)
	p.refresh(ctx, first)
	go p.refreshLoop(bg, first)
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

// refreshLoop refreshes every refresh_interval. Until a read has returned some
// metadata it tries sooner, after backoff and then twice as long each time, up to
// refresh_interval: without metadata every federated series passes through as a
// gauge, and a Prometheus that could not be reached when the collector started
// (restarting, or a NetworkPolicy not yet programmed for this new pod), or had
// scraped nothing yet (its metadata is empty until its first scrapes), must not
// cost a whole interval of mistyped series. Both were seen on a real cluster.
func (p *federationTypes) refreshLoop(ctx context.Context, backoff time.Duration) {
	defer close(p.done)
	for {
		wait := p.cfg.RefreshInterval
		if m := p.meta.Load(); m == nil || len(m.families) == 0 {
			wait = backoff
			backoff = min(2*backoff, p.cfg.RefreshInterval)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			p.refresh(ctx, backoff)
		}
	}
}

// refresh logs exactly once per attempt that fails, so a long outage is visible
// without flooding the log. retry is when the next attempt comes while no metadata
// has been read yet.
func (p *federationTypes) refresh(ctx context.Context, retry time.Duration) {
	s, err := p.fetcher.fetch(ctx, p.now())
	if err != nil {
		p.tel.ProcessorFederationTypesMetadataRefreshFailures.Add(ctx, 1)
		if old := p.meta.Load(); old != nil {
			p.logger.Warn("Metric metadata refresh failed; keeping the metadata read earlier",
				zap.Duration("metadata_age", p.now().Sub(old.fetched).Round(time.Second)),
				zap.Duration("next_attempt_in", p.cfg.RefreshInterval), zap.Error(err))
		} else {
			p.logger.Warn("Metric metadata unavailable; federated metrics pass through unchanged (as gauges) until it can be read",
				zap.Duration("next_attempt_in", retry), zap.Error(err))
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
