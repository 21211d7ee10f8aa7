// SPDX-License-Identifier: Apache-2.0

//go:build image

package image_test

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// elfMachine is the ELF machine each image architecture's binary must be built for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// sbomPath is where the Dockerfile puts the binary's SBOM (and the label names it).
const sbomPath = "/usr/share/doc/otelcol-relay/sbom.cdx.json"

type manifestList struct {
	Manifests []struct {
		Digest   string `json:"digest"`
		Platform struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
}

// TestImageManifestList inspects the manifest list `make image` built: one image
// per platform of PLATFORMS, each holding a static binary for its own architecture
// (read from the ELF header of the file copied out of the image), the SBOM of
// exactly that binary, and the CA bundle from the pinned Debian package.
func TestImageManifestList(t *testing.T) {
	e, platforms := manifestListEngine(t, "the manifest list is built with podman; docker builds the host's architecture only")
	var list manifestList
	if err := json.Unmarshal([]byte(e.output(t, "manifest", "inspect", e.image)), &list); err != nil {
		t.Fatalf("manifest inspect %s: %v", e.image, err)
	}
	digests := map[string]string{}
	for _, m := range list.Manifests {
		p := m.Platform.OS + "/" + m.Platform.Architecture
		if _, dup := digests[p]; dup {
			t.Errorf("%s appears twice in the manifest list", p)
		}
		digests[p] = m.Digest
	}
	if len(digests) != len(platforms) {
		t.Errorf("manifest list has %v, want exactly %v", keys(digests), platforms)
	}

	bundle := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if out, err := exec.Command(filepath.Join(e2e.RepoRoot(), "hack", "ca-bundle.sh"), bundle).CombinedOutput(); err != nil {
		t.Fatalf("hack/ca-bundle.sh: %v\n%s", err, out)
	}
	wantBundle, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range platforms {
		t.Run(p, func(t *testing.T) {
			digest, ok := digests[p]
			if !ok {
				t.Fatalf("%s is not in the manifest list %s", p, e.image)
			}
			// The list names each image by its manifest digest: repository@digest.
			repo := e.image
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i]
			}
			digest = repo + "@" + digest
			dir := t.TempDir()
			e.copyOut(t, digest, map[string]string{
				"/otelcol-relay":                     filepath.Join(dir, "otelcol-relay"),
				sbomPath:                             filepath.Join(dir, "sbom.cdx.json"),
				"/etc/ssl/certs/ca-certificates.crt": filepath.Join(dir, "ca.crt"),
			})
			arch := p[strings.Index(p, "/")+1:]
			checkELF(t, filepath.Join(dir, "otelcol-relay"), arch)
			checkSBOM(t, filepath.Join(dir, "sbom.cdx.json"), filepath.Join(dir, "otelcol-relay"))

			got, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantBundle) {
				t.Errorf("the image's CA bundle (%d bytes) is not the one hack/ca-bundle.sh builds from the pinned ca-certificates (%d bytes)", len(got), len(wantBundle))
			}
			labels := e.output(t, "image", "inspect", "--format", "{{json .Labels}}", digest)
			for _, want := range []string{
				`"org.opencontainers.image.version":"` + os.Getenv("RELAY_VERSION") + `"`,
				`"org.opencontainers.image.revision":`,
				`"io.otelcol-relay.sbom":"` + sbomPath + `"`,
			} {
				if !strings.Contains(labels, want) {
					t.Errorf("labels %s lack %s", labels, want)
				}
			}
		})
	}
}

// TestSBOMListsEveryModule checks the SBOM `make image` leaves beside each
// binary in bin/<os>_<arch>/ against that binary's own build information. No
// platform, a missing file, or fewer than minModules modules in the SBOM or from
// `go version -m` fails, naming what was empty: none of them may pass unchecked.
func TestSBOMListsEveryModule(t *testing.T) {
	platforms, err := sbomPlatforms(os.Getenv("RELAY_PLATFORMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		dir := filepath.Join(e2e.RepoRoot(), "bin", strings.ReplaceAll(p, "/", "_"))
		t.Run(p, func(t *testing.T) {
			checkSBOM(t, filepath.Join(dir, "otelcol-relay.cdx.json"), filepath.Join(dir, "otelcol-relay"))
		})
	}
}

// manifestListEngine is the engine and RELAY_PLATFORMS for a test of the
// multi-platform image, which only podman builds: with another engine the test
// skips, saying why.
func manifestListEngine(t *testing.T, why string) (engine, []string) {
	t.Helper()
	e := newEngine(t)
	if !strings.HasSuffix(e.bin, "podman") {
		t.Skip(why)
	}
	platforms := strings.Fields(os.Getenv("RELAY_PLATFORMS"))
	if len(platforms) == 0 {
		t.Fatal("RELAY_PLATFORMS must be set: run `make test-image`")
	}
	return e, platforms
}

// copyOut copies files out of one image of the list (by its digest) without
// running it: the image may be for another architecture.
func (e engine) copyOut(t *testing.T, image string, files map[string]string) {
	t.Helper()
	name := fmt.Sprintf("otelcol-relay-inspect-%d", time.Now().UnixNano())
	e.output(t, "create", "--name", name, image)
	defer func() { _ = e.cmd(context.Background(), "rm", "-f", name).Run() }()
	for from, to := range files {
		e.output(t, "cp", name+":"+from, to)
	}
}

func checkELF(t *testing.T, path, arch string) {
	t.Helper()
	want, ok := elfMachine[arch]
	if !ok {
		t.Fatalf("no ELF machine known for %s", arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != want || f.Class != elf.ELFCLASS64 {
		t.Errorf("binary in the %s image is %s %s, want %s", arch, f.Class, f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("binary in the %s image asks for a dynamic loader; FROM scratch needs a static binary (CGO_ENABLED=0)", arch)
		}
	}
	// The Go build information agrees (go version -m reads it for any GOARCH).
	info := goVersionM(t, path)
	if !strings.Contains(info, "\tGOARCH="+arch+"\n") || !strings.Contains(info, "\tCGO_ENABLED=0\n") {
		t.Errorf("build settings of the %s binary do not say GOARCH=%s CGO_ENABLED=0:\n%s", arch, arch, info)
	}
}

func goVersionM(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", path, err, out)
	}
	return string(out)
}

// checkSBOM: the SBOM names the binary's main module and lists every module in
// the binary at the version linked, and nothing else. A missing or empty input
// fails (compareSBOM, sbom_test.go): an empty list on either side proves nothing.
func checkSBOM(t *testing.T, sbomFile, bin string) {
	t.Helper()
	for _, in := range []struct{ path, what string }{{sbomFile, "the SBOM"}, {bin, "the binary"}} {
		if err := checkInput(in.path, in.what); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(sbomFile)
	if err != nil {
		t.Fatal(err)
	}
	n, problems := compareSBOM(sbomFile, data, bin, goVersionM(t, bin))
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) == 0 {
		t.Logf("%s: %d modules, each at the version in the binary", filepath.Base(sbomFile), n)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
