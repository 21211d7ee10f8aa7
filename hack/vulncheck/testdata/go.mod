// The vulnerability gate's selftest fixture (hack/vulncheck.sh selftest): its own
// module, outside otelcol-relay's. Pinned to a version that GO-2021-0113 affects;
// the selftest moves it to v0.3.7, the fix, whose go.sum lines are kept here too.
module example.com/vulncheckfixture

go 1.26

require golang.org/x/text v0.3.5
