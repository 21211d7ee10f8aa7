// SPDX-License-Identifier: Apache-2.0

package ocilayout

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout writes a layout at a temp dir whose index.json lists manifests, and one
// blob; it returns the dir and the blob's digest.
func layout(t *testing.T, manifests string, blob []byte) (string, string) {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256(blob)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"index.json": []byte(`{"schemaVersion":2,"manifests":[` + strings.ReplaceAll(manifests, "DIGEST", digest) + `]}`),
		filepath.Join("blobs", "sha256", digest[len("sha256:"):]): blob,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, digest
}

func TestTopAndBlob(t *testing.T) {
	dir, digest := layout(t, `{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"DIGEST","annotations":{"`+RefName+`":"v1.2.3"}}`, []byte(`{"manifests":[]}`))
	top, err := Top(dir)
	if err != nil {
		t.Fatal(err)
	}
	if top.Digest != digest || top.Annotations[RefName] != "v1.2.3" {
		t.Fatalf("Top = %+v, want digest %s tagged v1.2.3", top, digest)
	}
	var index struct{ Manifests []Descriptor }
	if err := ReadBlob(dir, top.Digest, &index); err != nil {
		t.Fatal(err)
	}
}

func TestTopWantsOneManifest(t *testing.T) {
	dir, _ := layout(t, `{"digest":"DIGEST"},{"digest":"DIGEST"}`, []byte(`{}`))
	if _, err := Top(dir); err == nil || !strings.Contains(err.Error(), "lists 2 manifests, want one") {
		t.Fatalf("Top of two manifests: %v", err)
	}
}

func TestBlobRefusesAnotherContent(t *testing.T) {
	dir, digest := layout(t, `{"digest":"DIGEST"}`, []byte(`{"a":1}`))
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", digest[len("sha256:"):]), []byte(`{"a":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Blob(dir, digest); err == nil || !strings.Contains(err.Error(), "does not have that digest") {
		t.Fatalf("Blob of changed content: %v", err)
	}
	for _, bad := range []string{"md5:00", "sha256:../index.json"} {
		if _, err := Blob(dir, bad); err == nil || !strings.Contains(err.Error(), "is not sha256") {
			t.Errorf("Blob(%q): %v", bad, err)
		}
	}
}
