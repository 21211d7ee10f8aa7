// SPDX-License-Identifier: Apache-2.0

// Command releasecheck verifies that a release tag's artifacts name one version:
// the tag vX.Y.Z, VERSION (X.Y.Z), the image tag in deploy/components/image and
// the Helm chart's version and appVersion as committed at the tag, CHANGELOG.md and UPGRADING.md sections "## X.Y.Z" at the tag, every
// `?ref=` and `newTag:` of deploy/README.md's remote-base example at the tag, the
// version the built binary reports, the version each SBOM names and, with
// -layout, the OCI labels of every image in the release's layout (version and
// revision: the tag and its commit; source and licenses present). It reports
// every disagreement, each naming the artifact and both values, and exits 1.
//
//	go run ./hack/releasecheck -tag v0.2.0 -binary bin/otelcol-relay [-layout dist/v0.2.0/image] bin/otelcol-relay.cdx.json ...
//
// `make release-check [TAG=vX.Y.Z]` builds the binary and its SBOM first and runs
// it on them; `make release` runs it again with the layout it wrote
// (docs/releasing.md).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// releaseTag is a release tag as the remote base's ?ref= and the image tag use it.
var releaseTag = regexp.MustCompile(`^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$`)

// imageComponent is the one place the manifests name the image (and its tag).
const imageComponent = "deploy/components/image/kustomization.yaml"

// chartFile is the Helm chart's metadata: version X.Y.Z, appVersion (the image tag
// it runs by default) vX.Y.Z.
const chartFile = "deploy/helm/otelcol-relay/Chart.yaml"

// installGuide shows the remote base pinned to a release (?ref=) with its image tag.
const installGuide = "deploy/README.md"

// pinRef matches a remote base's ?ref= and an images: entry's newTag: in a guide.
var pinRef = regexp.MustCompile("(?:\\?ref=|newTag: *)([^\\s)`'\"]+)")

func main() {
	tag := flag.String("tag", "", "the release tag to check, vX.Y.Z")
	binary := flag.String("binary", "bin/otelcol-relay", "the built collector")
	layout := flag.String("layout", "", "the release's image, an OCI layout (make release's dist/vX.Y.Z/image)")
	flag.Parse()
	err := check(*tag, *binary, flag.Args())
	images := 0
	if *layout != "" {
		var lerr error
		images, lerr = checkLayout(*tag, *layout)
		err = errors.Join(err, lerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	labels := ""
	if *layout != "" {
		labels = fmt.Sprintf(", and the labels of %d image(s)", images)
	}
	fmt.Printf("release-check %s: tag, VERSION, image tag, CHANGELOG, UPGRADING, deploy/README.md's ?ref=, binary and %d SBOM(s) agree%s\n", *tag, len(flag.Args()), labels)
}

// check returns every disagreement between the tag and its artifacts, joined.
func check(tag, binary string, sboms []string) error {
	m := releaseTag.FindStringSubmatch(tag)
	if m == nil {
		return fmt.Errorf("release-check: tag %q is not a release tag vX.Y.Z (pass TAG=vX.Y.Z, or check out a tagged commit)", tag)
	}
	version := m[1]
	if _, err := git("rev-parse", "--verify", "--quiet", tag+"^{commit}"); err != nil {
		return fmt.Errorf("release-check: there is no tag %s (HEAD is not a tagged commit when git describe says vX.Y.Z-N-g<commit>): tag it, or pass TAG=vX.Y.Z", tag)
	}
	var errs []error
	mismatch := func(what, got, want string) {
		errs = append(errs, fmt.Errorf("release-check %s: %s is %q, want %q", tag, what, got, want))
	}

	if v, err := git("show", tag+":VERSION"); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: VERSION at the tag: %w", tag, err))
	} else if v = strings.TrimSpace(v); v != version {
		mismatch("VERSION at the tag", v, version)
	}

	if k, err := git("show", tag+":"+imageComponent); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: %s at the tag: %w", tag, imageComponent, err))
	} else if got := field(k, "newTag"); got != tag {
		mismatch("the image tag (newTag) in "+imageComponent+" at the tag", got, tag)
	}

	if c, err := git("show", tag+":"+chartFile); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: %s at the tag: %w", tag, chartFile, err))
	} else {
		if got := field(c, "version"); got != version {
			mismatch("the chart's version in "+chartFile+" at the tag", got, version)
		}
		if got := field(c, "appVersion"); got != tag {
			mismatch("the chart's appVersion in "+chartFile+" at the tag", got, tag)
		}
	}

	if c, err := git("show", tag+":CHANGELOG.md"); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: CHANGELOG.md at the tag: %w", tag, err))
	} else if !hasSection(c, version) {
		errs = append(errs, fmt.Errorf("release-check %s: CHANGELOG.md at the tag has no section \"## %s\" (rename ## Unreleased to it)", tag, version))
	}

	if u, err := git("show", tag+":UPGRADING.md"); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: UPGRADING.md at the tag: %w", tag, err))
	} else if !hasSection(u, version) {
		errs = append(errs, fmt.Errorf("release-check %s: UPGRADING.md at the tag has no section \"## %s\" (rename ## Unreleased to it)", tag, version))
	}

	if r, err := git("show", tag+":"+installGuide); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: %s at the tag: %w", tag, installGuide, err))
	} else {
		for _, got := range pins(r) {
			if got != tag {
				mismatch("a remote base's ?ref= or the image's newTag in "+installGuide+" at the tag", got, tag)
			}
		}
	}

	if out, err := exec.Command(binary, "--version").CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("release-check %s: %s --version: %w: %s", tag, binary, err, strings.TrimSpace(string(out))))
	} else if got := strings.TrimPrefix(strings.TrimSpace(string(out)), "otelcol-relay version "); got != tag {
		mismatch(binary+" --version (build it from the tag, clean: make build)", got, tag)
	}

	if len(sboms) == 0 {
		errs = append(errs, fmt.Errorf("release-check %s: no SBOM given (make sbom, make cross)", tag))
	}
	for _, p := range sboms {
		got, err := sbomVersion(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("release-check %s: SBOM %s: %w", tag, p, err))
		} else if got != tag {
			mismatch("the version SBOM "+p+" names (metadata.component.version)", got, tag)
		}
	}
	return errors.Join(errs...)
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// field is the value of the first `key: value` line of a YAML file, unquoted
// (the image component has one image; a YAML parser is not worth a dependency).
func field(yaml, key string) string {
	s := bufio.NewScanner(strings.NewReader(yaml))
	for s.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s.Text()), "- "))
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			v, _, _ = strings.Cut(v, " #")
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// hasSection reports whether the changelog has a second-level heading for the
// version: "## 0.2.0", "## [0.2.0]" or "## 0.2.0 - 2026-12-02".
func hasSection(changelog, version string) bool {
	h := regexp.MustCompile(`(?m)^## \[?` + regexp.QuoteMeta(version) + `\]?(?:\s|$)`)
	return h.MatchString(changelog)
}

// sbomVersion is the version a CycloneDX SBOM gives the component it describes.
func sbomVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var doc struct {
		Metadata struct {
			Component struct {
				Version string `json:"version"`
			} `json:"component"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("not CycloneDX JSON: %w", err)
	}
	return doc.Metadata.Component.Version, nil
}

// pins are the distinct versions the guide pins, in order of appearance.
func pins(guide string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range pinRef.FindAllStringSubmatch(guide, -1) {
		if v := m[1]; !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
