// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"sync"
	"time"
)

// CounterRise is how a counter that starts at zero rose while a CounterWatch
// read it: when it first read above zero, its value a second after that (how
// fast a transfer runs), and when it last rose.
type CounterRise struct {
	First, Last   time.Time
	InFirstSecond float64
}

// CounterWatch reads a counter at an interval until Stop.
type CounterWatch struct {
	stop chan struct{}
	done chan CounterRise
	once sync.Once
	rise CounterRise
}

// WatchCounter reads read every interval; a read that fails (false: the
// process has exited, say) is skipped.
func WatchCounter(read func() (float64, bool), every time.Duration) *CounterWatch {
	w := &CounterWatch{stop: make(chan struct{}), done: make(chan CounterRise, 1)}
	go func() {
		var r CounterRise
		var last float64
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				w.done <- r
				return
			case <-tick.C:
			}
			v, ok := read()
			if !ok || v <= last {
				continue
			}
			now := time.Now()
			if r.First.IsZero() {
				r.First = now
			}
			if now.Sub(r.First) <= time.Second {
				r.InFirstSecond = v
			}
			last, r.Last = v, now
		}
	}()
	return w
}

// Stop ends the reads and returns what they saw; again, the same.
func (w *CounterWatch) Stop() CounterRise {
	w.once.Do(func() {
		close(w.stop)
		w.rise = <-w.done
	})
	return w.rise
}
