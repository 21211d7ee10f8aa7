// SPDX-License-Identifier: Apache-2.0

// Package ocilayout reads an OCI image layout (index.json and blobs/sha256/), as
// `make release` writes its image: the release check, the image tests and the
// cluster's release test read the same files the same way, each blob checked
// against its digest.
package ocilayout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RefName is the annotation that tags a manifest of index.json.
const RefName = "org.opencontainers.image.ref.name"

// Descriptor points at a blob: a manifest list, a manifest or a config.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// Top is the one manifest index.json lists, as make release writes it.
func Top(dir string) (Descriptor, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return Descriptor{}, err
	}
	var index struct{ Manifests []Descriptor }
	if err := json.Unmarshal(b, &index); err != nil {
		return Descriptor{}, fmt.Errorf("%s/index.json: %w", dir, err)
	}
	if len(index.Manifests) != 1 {
		return Descriptor{}, fmt.Errorf("%s/index.json lists %d manifests, want one: %s", dir, len(index.Manifests), b)
	}
	return index.Manifests[0], nil
}

// Blob is the content of digest's blob, after checking it has that digest.
func Blob(dir, digest string) ([]byte, error) {
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || strings.ContainsAny(hexDigest, "/.") {
		return nil, fmt.Errorf("%s: digest %q is not sha256", dir, digest)
	}
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexDigest))
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexDigest {
		return nil, fmt.Errorf("%s: blob %s does not have that digest", dir, digest)
	}
	return b, nil
}

// ReadBlob decodes digest's JSON blob into v (Blob's check first).
func ReadBlob(dir, digest string, v any) error {
	b, err := Blob(dir, digest)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: blob %s: %w", dir, digest, err)
	}
	return nil
}
