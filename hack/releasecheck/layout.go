// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/internal/ocilayout"
)

// The OCI labels every image of a release carries (the Dockerfile's LABEL).
const (
	labelVersion  = "org.opencontainers.image.version"
	labelRevision = "org.opencontainers.image.revision"
	labelSource   = "org.opencontainers.image.source"
	labelLicenses = "org.opencontainers.image.licenses"
)

// checkLayout checks the OCI layout at dir, make release's image: one index
// tagged tag, and in every image's config the labels naming tag, the tag's
// commit, the source and the licences. It returns how many images it checked.
func checkLayout(tag, dir string) (int, error) {
	commit, err := git("rev-parse", "--verify", "--quiet", tag+"^{commit}")
	if err != nil {
		return 0, fmt.Errorf("release-check %s: no commit for the tag: %w", tag, err)
	}
	commit = strings.TrimSpace(commit)
	top, err := ocilayout.Top(dir)
	if err != nil {
		return 0, fmt.Errorf("release-check %s: layout %s: %w", tag, dir, err)
	}
	if top.Annotations[ocilayout.RefName] != tag {
		return 0, fmt.Errorf("release-check %s: layout %s: index.json does not hold one image tagged %s", tag, dir, tag)
	}
	var index struct{ Manifests []ocilayout.Descriptor }
	if err := ocilayout.ReadBlob(dir, top.Digest, &index); err != nil {
		return 0, fmt.Errorf("release-check %s: layout %s: %w", tag, dir, err)
	}
	var errs []error
	for _, m := range index.Manifests {
		platform := m.Digest
		if m.Platform != nil {
			platform = m.Platform.OS + "/" + m.Platform.Architecture
		}
		var manifest struct{ Config ocilayout.Descriptor }
		var config struct {
			Config struct{ Labels map[string]string }
		}
		if err := ocilayout.ReadBlob(dir, m.Digest, &manifest); err != nil {
			errs = append(errs, fmt.Errorf("release-check %s: layout %s, image %s: %w", tag, dir, platform, err))
			continue
		}
		if err := ocilayout.ReadBlob(dir, manifest.Config.Digest, &config); err != nil {
			errs = append(errs, fmt.Errorf("release-check %s: layout %s, image %s: %w", tag, dir, platform, err))
			continue
		}
		labels := config.Config.Labels
		for label, want := range map[string]string{labelVersion: tag, labelRevision: commit} {
			if got := labels[label]; got != want {
				errs = append(errs, fmt.Errorf("release-check %s: the label %s of the %s image is %q, want %q", tag, label, platform, got, want))
			}
		}
		for _, label := range []string{labelSource, labelLicenses} {
			if labels[label] == "" {
				errs = append(errs, fmt.Errorf("release-check %s: the %s image has no label %s", tag, platform, label))
			}
		}
	}
	if len(index.Manifests) == 0 {
		errs = append(errs, fmt.Errorf("release-check %s: layout %s: the index lists no image", tag, dir))
	}
	return len(index.Manifests), errors.Join(errs...)
}
