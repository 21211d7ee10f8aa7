// SPDX-License-Identifier: Apache-2.0

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

// titleLabel is the label Tamper changes: every image make release builds has it.
const titleLabel = `"org.opencontainers.image.title":"otelcol-relay"`

// Tamper copies the layout at src to dst (which must not exist) and changes one
// byte of its first image's config (the title label's value), writing the
// digests above it anew (manifest, index, index.json) as a registry would see
// them: a rebuilt or tampered image under the same tag. It returns the index's
// new digest.
func Tamper(src, dst string) (string, error) {
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return "", err
	}
	var top map[string]any
	if err := readJSON(filepath.Join(dst, "index.json"), &top); err != nil {
		return "", err
	}
	topManifests, _ := top["manifests"].([]any)
	if len(topManifests) != 1 {
		return "", fmt.Errorf("%s/index.json lists %d manifests, want one", dst, len(topManifests))
	}
	indexDesc, _ := topManifests[0].(map[string]any)
	var index map[string]any
	if err := ReadBlob(dst, str(indexDesc["digest"]), &index); err != nil {
		return "", err
	}
	images, _ := index["manifests"].([]any)
	if len(images) == 0 {
		return "", fmt.Errorf("%s: the image index lists no image", dst)
	}
	imageDesc, _ := images[0].(map[string]any)
	var manifest map[string]any
	if err := ReadBlob(dst, str(imageDesc["digest"]), &manifest); err != nil {
		return "", err
	}
	configDesc, _ := manifest["config"].(map[string]any)
	config, err := Blob(dst, str(configDesc["digest"]))
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(config), titleLabel) {
		return "", fmt.Errorf("%s: the image config has no %s to change", dst, titleLabel)
	}
	changed := strings.Replace(string(config), titleLabel, `"org.opencontainers.image.title":"otelcol-relaz"`, 1)

	put := func(desc map[string]any, b []byte) error {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		desc["digest"], desc["size"] = "sha256:"+h, len(b)
		return os.WriteFile(filepath.Join(dst, "blobs", "sha256", h), b, 0o644)
	}
	if perr := put(configDesc, []byte(changed)); perr != nil {
		return "", perr
	}
	for _, step := range []struct {
		desc map[string]any
		v    any
	}{{imageDesc, manifest}, {indexDesc, index}} {
		b, merr := json.Marshal(step.v)
		if merr != nil {
			return "", merr
		}
		if perr := put(step.desc, b); perr != nil {
			return "", perr
		}
	}
	b, err := json.Marshal(top)
	if err != nil {
		return "", err
	}
	return str(indexDesc["digest"]), os.WriteFile(filepath.Join(dst, "index.json"), b, 0o644)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
