// SPDX-License-Identifier: Apache-2.0

package image_test

// The SBOM check of TestSBOMListsEveryModule and TestImageManifestList, without
// podman: this file has no build tag, so `go test ./test/image/` runs the tests of
// the check itself (empty and missing inputs must fail, not pass with nothing
// compared) while the image tests stay behind the `image` tag.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// minModules is the fewest Go modules a relay binary links (it links several
// hundred). Fewer, on either side, means the input is not the relay's or is empty,
// and a comparison over it would pass having checked nothing.
const minModules = 50

// sbomPlatforms are the platforms of RELAY_PLATFORMS, whose bin/<os>_<arch>/ SBOMs
// are checked; none is an error, or the test would pass with no subtest.
func sbomPlatforms(env string) ([]string, error) {
	p := strings.Fields(env)
	if len(p) == 0 {
		return nil, errors.New("RELAY_PLATFORMS is empty: no SBOM to check; run `make test-image`, which sets it")
	}
	return p, nil
}

// checkInput: path is a regular file with something in it.
func checkInput(path, what string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s %s does not exist: `make image` (make cross) writes it", what, path)
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s %s is not a regular file", what, path)
	case fi.Size() == 0:
		return fmt.Errorf("%s %s is empty (0 bytes)", what, path)
	}
	return nil
}

// parseBuildInfo reads `go version -m` output: the main module, and the modules
// linked into the binary, path -> version, with replace directives applied (what
// was actually compiled).
func parseBuildInfo(out string) (main string, deps map[string]string) {
	deps = map[string]string{}
	var last string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(strings.TrimPrefix(sc.Text(), "\t"), "\t")
		switch {
		case f[0] == "mod" && len(f) >= 2:
			main = f[1]
		case f[0] == "dep" && len(f) >= 3:
			last = f[1]
			deps[f[1]] = f[2]
		case f[0] == "=>" && len(f) >= 3 && last != "":
			delete(deps, last)
			deps[f[1]] = f[2]
		}
	}
	return main, deps
}

type cycloneDX struct {
	BOMFormat string `json:"bomFormat"`
	Metadata  struct {
		Component cdxComponent `json:"component"`
	} `json:"metadata"`
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// compareSBOM checks an SBOM (the file's contents) against `go version -m` of the
// binary it describes: it names the main module and lists every module linked, at
// the version linked, and nothing else. It returns the number of modules compared
// and one message per problem; an input with fewer than minModules modules is a
// problem, named, and nothing is compared.
func compareSBOM(sbomName string, sbom []byte, binName, buildInfo string) (int, []string) {
	if len(sbom) == 0 {
		return 0, []string{fmt.Sprintf("the SBOM %s is empty (0 bytes)", sbomName)}
	}
	var bom cycloneDX
	if err := json.Unmarshal(sbom, &bom); err != nil {
		return 0, []string{fmt.Sprintf("the SBOM %s: %v", sbomName, err)}
	}
	var problems []string
	if bom.BOMFormat != "CycloneDX" {
		problems = append(problems, fmt.Sprintf("the SBOM %s: bomFormat %q, want CycloneDX", sbomName, bom.BOMFormat))
	}
	main, want := parseBuildInfo(buildInfo)
	if main == "" || len(want) < minModules {
		return 0, append(problems, fmt.Sprintf("go version -m %s: main module %q and %d modules, want a main module and at least %d: is it the relay binary?",
			binName, main, len(want), minModules))
	}
	got := map[string]string{}
	for _, c := range bom.Components {
		if strings.HasPrefix(c.PURL, "pkg:golang/") {
			got[c.Name] = c.Version
		}
	}
	if len(got) < minModules {
		return 0, append(problems, fmt.Sprintf("the SBOM %s lists %d Go modules (pkg:golang/ components of %d), want at least %d; the binary has %d",
			sbomName, len(got), len(bom.Components), minModules, len(want)))
	}
	if bom.Metadata.Component.Name != main {
		problems = append(problems, fmt.Sprintf("the SBOM %s describes %q, want the binary's main module %q", sbomName, bom.Metadata.Component.Name, main))
	}
	var missing, wrong, extra []string
	for path, v := range want {
		switch gv, ok := got[path]; {
		case !ok:
			missing = append(missing, path+"@"+v)
		case gv != v:
			wrong = append(wrong, fmt.Sprintf("%s: SBOM %s, binary %s", path, gv, v))
		}
	}
	for path, v := range got {
		if _, ok := want[path]; !ok {
			extra = append(extra, path+"@"+v)
		}
	}
	sort.Strings(missing)
	sort.Strings(wrong)
	sort.Strings(extra)
	if len(missing)+len(wrong)+len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("the SBOM %s against go version -m %s (%d modules):\nmissing %v\nwrong version %v\nnot in the binary %v",
			sbomName, binName, len(want), missing, wrong, extra))
	}
	return len(want), problems
}

// fixture is `go version -m` output with n dependencies, and an SBOM listing them.
func fixture(t *testing.T, n int) (buildInfo string, sbom []byte) {
	t.Helper()
	var b strings.Builder
	b.WriteString("bin/otelcol-relay: go1.26.0\n\tpath\texample.com/relay/cmd\n\tmod\texample.com/relay\t(devel)\t\n")
	bom := cycloneDX{BOMFormat: "CycloneDX"}
	bom.Metadata.Component = cdxComponent{Name: "example.com/relay"}
	for i := range n {
		m := fmt.Sprintf("example.com/dep%d", i)
		fmt.Fprintf(&b, "\tdep\t%s\tv1.0.%d\th1:x=\n", m, i)
		bom.Components = append(bom.Components, cdxComponent{Name: m, Version: fmt.Sprintf("v1.0.%d", i), PURL: "pkg:golang/" + m})
	}
	data, err := json.Marshal(bom)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), data
}

func TestCompareSBOMMatchingInputsPass(t *testing.T) {
	info, sbom := fixture(t, minModules+10)
	n, problems := compareSBOM("sbom.cdx.json", sbom, "otelcol-relay", info)
	if len(problems) > 0 || n != minModules+10 {
		t.Fatalf("matching SBOM and build info: %d modules, problems %q", n, problems)
	}
	// A version that differs is still caught.
	info = strings.Replace(info, "\tv1.0.3\t", "\tv1.0.99\t", 1)
	if _, problems := compareSBOM("sbom.cdx.json", sbom, "otelcol-relay", info); len(problems) != 1 || !strings.Contains(problems[0], "binary v1.0.99") {
		t.Fatalf("a module at another version: problems %q", problems)
	}
}

// TestSBOMCheckFailsOnEmptyInput: each way the input can be empty is a failure
// whose message names what was empty.
func TestSBOMCheckFailsOnEmptyInput(t *testing.T) {
	info, sbom := fixture(t, minModules+10)
	noDeps, _ := fixture(t, 0)
	_, emptyBOM := fixture(t, 0)
	for _, c := range []struct {
		name       string
		sbom       []byte
		buildInfo  string
		wantInText string
	}{
		{"no SBOM components", emptyBOM, info, "lists 0 Go modules"},
		{"SBOM components without pkg:golang", []byte(`{"bomFormat":"CycloneDX","components":[{"name":"x","purl":"pkg:npm/x"}]}`), info, "lists 0 Go modules (pkg:golang/ components of 1)"},
		{"SBOM file empty", nil, info, "is empty (0 bytes)"},
		{"no output from go version -m", sbom, "", `main module "" and 0 modules`},
		{"no modules from go version -m", sbom, noDeps, "and 0 modules, want a main module and at least"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, problems := compareSBOM("sbom.cdx.json", c.sbom, "otelcol-relay", c.buildInfo)
			if len(problems) == 0 {
				t.Fatal("compareSBOM found no problem: the check would pass having compared nothing")
			}
			if !strings.Contains(strings.Join(problems, "\n"), c.wantInText) {
				t.Errorf("problems %q do not say %q", problems, c.wantInText)
			}
		})
	}

	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.cdx.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.cdx.json"): "the SBOM " + filepath.Join(dir, "missing.cdx.json") + " does not exist",
		empty:                                  "is empty (0 bytes)",
		dir:                                    "is not a regular file",
	} {
		if err := checkInput(path, "the SBOM"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkInput(%s) = %v, want an error saying %q", path, err, want)
		}
	}

	if _, err := sbomPlatforms(" "); err == nil || !strings.Contains(err.Error(), "RELAY_PLATFORMS is empty") {
		t.Errorf("sbomPlatforms of an empty RELAY_PLATFORMS = %v, want an error naming it", err)
	}
	if p, err := sbomPlatforms("linux/amd64 linux/arm64"); err != nil || len(p) != 2 {
		t.Errorf("sbomPlatforms(linux/amd64 linux/arm64) = %v, %v", p, err)
	}
}
