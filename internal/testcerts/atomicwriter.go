// SPDX-License-Identifier: Apache-2.0

package testcerts

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// The names the kubelet's atomic writer uses inside a Secret or ConfigMap volume.
const (
	DataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// AtomicWrite replaces the whole content of dir with files, step for step the way
// the kubelet's atomic writer (k8s.io/kubernetes/pkg/volume/util/atomic_writer.go)
// updates a mounted Secret:
//
//  1. write every file into a new timestamped directory "..YYYY_MM_DD_HH_MM_SS.<random>";
//  2. create the symlink "..data_tmp" -> that directory;
//  3. rename "..data_tmp" over "..data" (the one atomic step);
//  4. create the user-visible symlinks "<name>" -> "..data/<name>" that are missing,
//     and remove those whose file is gone;
//  5. remove the previous timestamped directory.
//
// So a reader never sees a half-written file, the user-visible names never change,
// and a watch on a file (rather than on its directory) goes stale after the first
// update, because the inode it watched is deleted in step 5.
func AtomicWrite(t tb.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := atomicWrite(dir, files); err != nil {
		t.Fatalf("testcerts: atomic write into %s: %v", dir, err)
	}
}

// AtomicWriteErr is AtomicWrite for a goroutine other than the test's own,
// which must not call t.Fatal: it returns the error.
func AtomicWriteErr(dir string, files map[string][]byte) error {
	return atomicWrite(dir, files)
}

func atomicWrite(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dataDir := filepath.Join(dir, DataDirName)
	oldTSDir, err := os.Readlink(dataDir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	oldNames := map[string]bool{}
	if oldTSDir != "" {
		entries, rerr := os.ReadDir(filepath.Join(dir, oldTSDir))
		if rerr != nil {
			return rerr
		}
		for _, e := range entries {
			oldNames[e.Name()] = true
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if filepath.Base(name) != name || name == "" || name[0] == '.' {
			return fmt.Errorf("file name %q: the atomic writer takes plain names", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(tsDir, name), files[name], 0o644); err != nil {
			return err
		}
	}

	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, dataDir); err != nil {
		return err
	}

	for _, name := range names {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(DataDirName, name), link); err != nil {
			return err
		}
	}
	for name := range oldNames {
		if _, ok := files[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	if oldTSDir != "" {
		return os.RemoveAll(filepath.Join(dir, oldTSDir))
	}
	return nil
}
