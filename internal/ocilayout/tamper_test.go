// SPDX-License-Identifier: Apache-2.0

package ocilayout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// chain writes a layout of one index, one image and its config, as make release
// writes one platform; it returns the dir and the index's digest.
func chain(t *testing.T, config string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(b string) string {
		sum := sha256.Sum256([]byte(b))
		h := hex.EncodeToString(sum[:])
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", h), []byte(b), 0o444); err != nil {
			t.Fatal(err)
		}
		return "sha256:" + h
	}
	cfg := put(config)
	image := put(fmt.Sprintf(`{"schemaVersion":2,"config":{"digest":%q,"size":%d},"layers":[]}`, cfg, len(config)))
	index := put(fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"digest":%q,"platform":{"os":"linux","architecture":"amd64"}}]}`, image))
	top := fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":%q,"annotations":{%q:"v1.2.3"}}]}`, index, RefName)
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(top), 0o444); err != nil {
		t.Fatal(err)
	}
	return dir, index
}

func TestTamperChangesOneByteAndEveryDigestAbove(t *testing.T) {
	src, before := chain(t, `{"config":{"Labels":{`+titleLabel+`}}}`)
	dst := filepath.Join(t.TempDir(), "tampered")
	after, err := Tamper(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatalf("the tampered index kept the digest %s", before)
	}
	top, err := Top(dst)
	if err != nil || top.Digest != after || top.Annotations[RefName] != "v1.2.3" {
		t.Fatalf("Top(tampered) = %+v, %v; want digest %s under the same tag", top, err, after)
	}
	var index struct{ Manifests []Descriptor }
	if rerr := ReadBlob(dst, after, &index); rerr != nil {
		t.Fatal(rerr)
	}
	var image struct{ Config Descriptor }
	if rerr := ReadBlob(dst, index.Manifests[0].Digest, &image); rerr != nil {
		t.Fatal(rerr)
	}
	config, err := Blob(dst, image.Config.Digest)
	if err != nil {
		t.Fatal(err)
	}
	original, _ := Blob(src, "sha256:"+sha(t, `{"config":{"Labels":{`+titleLabel+`}}}`))
	if diff := differing(config, original); len(config) != len(original) || diff != 1 {
		t.Errorf("the tampered config differs from the original in %d bytes (lengths %d, %d), want 1", diff, len(config), len(original))
	}
	if top, err := Top(src); err != nil || top.Digest != before {
		t.Errorf("the source layout changed: %+v, %v", top, err)
	}
}

func TestTamperWantsTheTitleLabel(t *testing.T) {
	src, _ := chain(t, `{"config":{"Labels":{}}}`)
	if _, err := Tamper(src, filepath.Join(t.TempDir(), "tampered")); err == nil {
		t.Fatal("Tamper changed a config without the title label")
	}
}

func sha(t *testing.T, s string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func differing(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
