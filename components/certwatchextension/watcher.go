// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// watcher triggers checks of the material: on file-system events in the
// directories that hold the files (debounced), and every poll_interval.
//
// It watches directories, never the files: Kubernetes updates a mounted Secret
// by swapping the "..data" symlink to a new directory and deleting the old one,
// so a watch on the file's inode is gone after the first update. Editors and
// "kubectl cp" replace files by rename, with the same effect. The poll with a
// content hash covers what events miss (a replaced parent directory, network
// file systems, an exhausted inotify limit).
type watcher struct {
	e   *certwatch
	fsw *fsnotify.Watcher
}

func newWatcher(e *certwatch) *watcher {
	w := &watcher{e: e}
	if !e.watchFS {
		return w
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		e.logger.Warn("Cannot watch the TLS files; relying on poll_interval alone", zap.Error(err), zap.Duration("poll_interval", e.cfg.PollInterval))
		return w
	}
	w.fsw = fsw
	w.syncDirs()
	return w
}

// dirs are the directories to watch: each file's own directory, plus the one its
// symlinks resolve to (a Kubernetes "..<timestamp>" dir, or a file linked from
// elsewhere), so a change behind a symlink is seen too.
func (w *watcher) dirs() map[string]bool {
	want := map[string]bool{}
	for _, p := range []string{w.e.cfg.CAFile, w.e.cfg.CertFile, w.e.cfg.KeyFile} {
		if p == "" {
			continue
		}
		want[filepath.Dir(filepath.Clean(p))] = true
		if target, err := filepath.EvalSymlinks(p); err == nil {
			want[filepath.Dir(target)] = true
		}
	}
	return want
}

// syncDirs adds the watches that are missing (a directory that reappeared, a new
// symlink target) and drops those no longer wanted.
func (w *watcher) syncDirs() {
	if w.fsw == nil {
		return
	}
	want := w.dirs()
	have := map[string]bool{}
	for _, d := range w.fsw.WatchList() {
		have[d] = true
		if !want[d] {
			_ = w.fsw.Remove(d)
		}
	}
	for d := range want {
		if have[d] {
			continue
		}
		if err := w.fsw.Add(d); err != nil {
			// The directory may not exist right now; the poll will retry.
			w.e.logger.Debug("Cannot watch directory", zap.String("dir", d), zap.Error(err))
		}
	}
}

func (w *watcher) run(ctx context.Context) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fsw != nil {
		defer w.fsw.Close()
		events, errs = w.fsw.Events, w.fsw.Errors
	}
	poll := time.NewTicker(w.e.cfg.PollInterval)
	defer poll.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	// wake validates material rejected as not valid yet again at its
	// NotBefore; the poll does too, should the timer be early or late.
	wake := time.NewTimer(time.Hour)
	wake.Stop()
	defer wake.Stop()
	check := func() {
		w.e.check(ctx)
		if at := w.e.retryAt; !at.IsZero() {
			wake.Reset(time.Until(at))
		} else {
			wake.Stop()
		}
		w.syncDirs()
	}

	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			debounce.Reset(w.e.debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.e.logger.Warn("File watch error; poll_interval still applies", zap.Error(err))
		case <-debounce.C:
			check()
		case <-poll.C:
			check()
		case <-wake.C:
			check()
		}
	}
}
