// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"fmt"
	"os"
)

// datasync and dirsync are fdatasync of a segment and fsync of the store's
// directory; storeOptions may replace them (tests inject failures).
func (s *store) datasync(f *os.File) error {
	if s.opts.fdatasync != nil {
		return s.opts.fdatasync(f)
	}
	return fdatasync(f)
}

func (s *store) dirsync() error {
	if s.opts.syncDir != nil {
		return s.opts.syncDir(s.dir)
	}
	return syncDir(s.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // G304: the store's own directory, opened to fsync it
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("queue_storage: fsync %s: %w", dir, err)
	}
	return nil
}
