// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"regexp"

	"github.com/google/pprof/profile"
)

// categories of a record's CPU, in priority order: a sample belongs to the
// first category any frame of its stack matches. GC first (an allocation that
// assists the collector is GC work, wherever it happens), then the queue's own
// work, then the codecs.
var categories = []struct {
	name string
	re   *regexp.Regexp
}{
	{"GC", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcStart|markroot|gcDrain)`)},
	{"gzip", regexp.MustCompile(`^compress/(flate|gzip)|klauspost/compress`)},
	{"TLS", regexp.MustCompile(`^crypto/`)},
	{"read back (queue read + decode)", regexp.MustCompile(`persistentQueue\[.*\]\)\.(Read|getNextItem)$`)},
	{"persist (queue write + encode, delete)", regexp.MustCompile(`persistentQueue\[.*\]\)\.(Offer|putInternal|onDone|itemDispatchingFinish)$|filestorage|bbolt|queuestorageextension`)},
	{"batch merge", regexp.MustCompile(`Request\)\.MergeSplit$|\.mergeTo|\.extract(Logs|Metrics|Traces)|partitionBatcher\)\.Consume`)},
	{"encode (exporter)", regexp.MustCompile(`MarshalProto|\.Marshal`)},
	{"decode (receiver)", regexp.MustCompile(`UnmarshalProto|\.Unmarshal`)},
	{"processors", regexp.MustCompile(`/processor/|processorhelper|k8sattributes|groupbyattrs|attributestoresource|memorylimiter`)},
	{"network, HTTP, syscalls", regexp.MustCompile(`^(syscall|internal/poll|net\.|net/http|internal/runtime/syscall)`)},
}

const otherCategory = "other (scheduler, allocation, ...)"

// attribute returns each category's share (0..1) of the CPU samples in the
// profile file.
func attribute(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, err
	}
	vi := len(p.SampleType) - 1 // cpu nanoseconds
	out := map[string]float64{}
	var total float64
	for _, s := range p.Sample {
		v := float64(s.Value[vi])
		total += v
		cat := otherCategory
	find:
		for _, c := range categories {
			for _, loc := range s.Location {
				for _, ln := range loc.Line {
					if ln.Function != nil && c.re.MatchString(ln.Function.Name) {
						cat = c.name
						break find
					}
				}
			}
		}
		out[cat] += v
	}
	for k := range out {
		out[k] /= max(total, 1)
	}
	return out, nil
}
