// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The OCI labels every image of a release carries (the Dockerfile's LABEL).
const (
	labelVersion  = "org.opencontainers.image.version"
	labelRevision = "org.opencontainers.image.revision"
	labelSource   = "org.opencontainers.image.source"
	labelLicenses = "org.opencontainers.image.licenses"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// checkLayout checks the OCI layout at dir, make release's image: one index
// tagged tag, and in every image's config the labels naming tag, the tag's
// commit, the source and the licences. It returns how many images it checked.
func checkLayout(tag, dir string) (int, error) {
	commit, err := git("rev-parse", "--verify", "--quiet", tag+"^{commit}")
	if err != nil {
		return 0, fmt.Errorf("release-check %s: no commit for the tag: %w", tag, err)
	}
	commit = strings.TrimSpace(commit)
	var top struct{ Manifests []descriptor }
	if err := readJSON(filepath.Join(dir, "index.json"), &top); err != nil {
		return 0, fmt.Errorf("release-check %s: layout %s: %w", tag, dir, err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag {
		return 0, fmt.Errorf("release-check %s: layout %s: index.json does not hold one image tagged %s", tag, dir, tag)
	}
	var index struct{ Manifests []descriptor }
	if err := readBlob(dir, top.Manifests[0].Digest, &index); err != nil {
		return 0, fmt.Errorf("release-check %s: layout %s: %w", tag, dir, err)
	}
	var errs []error
	for _, m := range index.Manifests {
		platform := m.Digest
		if m.Platform != nil {
			platform = m.Platform.OS + "/" + m.Platform.Architecture
		}
		var manifest struct{ Config descriptor }
		var config struct {
			Config struct{ Labels map[string]string }
		}
		if err := readBlob(dir, m.Digest, &manifest); err != nil {
			errs = append(errs, fmt.Errorf("release-check %s: layout %s, image %s: %w", tag, dir, platform, err))
			continue
		}
		if err := readBlob(dir, manifest.Config.Digest, &config); err != nil {
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

// readBlob decodes the layout's blob digest, after checking its content has that digest.
func readBlob(dir, digest string, v any) error {
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || strings.ContainsAny(hexDigest, "/.") {
		return fmt.Errorf("digest %q is not sha256", digest)
	}
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexDigest))
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexDigest {
		return fmt.Errorf("blob %s does not have that digest", digest)
	}
	return json.Unmarshal(b, v)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
